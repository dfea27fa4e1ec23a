// A limit on MQTT packet size before anything buffers the packet (issue 10, item 2). mqtt-packet, which
// Aedes uses, collects a whole packet in memory before parsing it and has no size limit (aedes#831), so a
// client declaring a 256 MB CONNECT was read to the end. This guard reads the fixed header of each packet
// (MQTT 3.1.1 §2.2: one type byte, then the remaining length in 1–4 bytes of 7 bits) as the bytes go by, and
// destroys the connection as soon as a declared remaining length exceeds the limit.
import type { Duplex } from 'node:stream';

/** Largest remaining length a fixed header can declare (§2.2.3): 4 bytes of 7 bits. */
const MAX_VARINT_BYTES = 4;

/** Tracks packet boundaries in a byte stream; `feed` returns the offending declared length, or null. */
export function fixedHeaderWatcher(maxBytes: number) {
  let state: 'type' | 'length' | 'body' = 'type';
  let length = 0;
  let multiplier = 1;
  let lengthBytes = 0;
  let rest = 0;
  return function feed(chunk: Buffer): number | null {
    let i = 0;
    while (i < chunk.length) {
      if (state === 'body') {
        const skip = Math.min(rest, chunk.length - i);
        i += skip;
        rest -= skip;
        if (rest === 0) state = 'type';
      } else if (state === 'type') {
        i++;
        state = 'length';
        length = 0; multiplier = 1; lengthBytes = 0;
      } else {
        const byte = chunk[i++];
        length += (byte & 0x7f) * multiplier;
        multiplier *= 128;
        lengthBytes++;
        if (byte & 0x80) {
          if (lengthBytes === MAX_VARINT_BYTES) return Infinity; // malformed: mqtt-packet refuses it too
          continue;
        }
        if (length > maxBytes) return length;
        rest = length;
        state = rest === 0 ? 'type' : 'body';
      }
    }
    return null;
  };
}

/**
 * Watches what Aedes reads from `conn` and destroys the connection on a packet declared over `maxBytes`.
 * Call after `broker.handle(conn)`: Aedes reads in paused mode ('readable' + read()), and a 'data'
 * listener added then sees each chunk as read() returns it, without switching the stream to flowing mode.
 * The destroyed connection is read no further; Aedes has buffered at most the one chunk holding the header
 * (a socket read is at most 64 KiB, a TLS record 16 KiB, a WebSocket message the limit: with a limit above
 * those, an oversize packet is never whole in one chunk, so Aedes never acts on it).
 */
export function guardPacketSize(conn: Duplex, maxBytes: number, onCut: (declared: number) => void): void {
  const feed = fixedHeaderWatcher(maxBytes);
  const watch = (chunk: Buffer | string) => {
    const declared = feed(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
    if (declared === null) return;
    conn.off('data', watch);
    onCut(declared);
    conn.destroy();
  };
  conn.on('data', watch);
}
