// Limits on MQTT packets before anything buffers or handles them. Size: mqtt-packet, which Aedes
// uses, collects a whole packet in memory before parsing it and has no size limit (aedes#831), so a client declaring
// a 256 MB CONNECT was read to the end. Filters per SUBSCRIBE: Aedes authorizes each filter of a SUBSCRIBE, so one
// packet of 10,000 filters cost 10,000 refusals (and as many log lines). This guard reads the fixed header of each
// packet (MQTT 3.1.1 §2.2: one type byte, then the remaining length in 1–4 bytes of 7 bits) and, in a SUBSCRIBE, the
// length of each topic filter (§3.8.3: a 2-byte packet id, then per filter a 2-byte length, the filter, one QoS byte),
// as the bytes go by, and destroys the connection as soon as a packet declares a remaining length over the limit or a
// SUBSCRIBE reaches one filter more than allowed. MQTT 3.1.1 gives a server no other answer: SUBACK 0x80 refuses one
// filter, and still costs its handling; Aedes speaks only 3.1 and 3.1.1, whose SUBSCRIBE has no properties.
import type { Duplex } from 'node:stream';

/** Largest remaining length a fixed header can declare (§2.2.3): 4 bytes of 7 bits. */
const MAX_VARINT_BYTES = 4;
const SUBSCRIBE = 8;

export interface PacketLimits {
  /** Largest remaining length a packet may declare (bytes). */
  maxBytes: number;
  /** Most topic filters in one SUBSCRIBE. */
  maxFilters: number;
}

/** Why a connection was cut: a packet declared over the size limit (Infinity: malformed), or a SUBSCRIBE of too many filters. */
export type PacketCut = { reason: 'packet_too_large'; declared: number } | { reason: 'too_many_filters'; filters: number };

/** Tracks packet boundaries (and SUBSCRIBE filters) in a byte stream; `feed` returns the first limit broken, or null. */
export function packetWatcher(limits: PacketLimits) {
  let state: 'type' | 'length' | 'body' | 'skip' | 'filterLength' = 'type';
  let subscribe = false;
  let length = 0;
  let multiplier = 1;
  let lengthBytes = 0;
  let rest = 0; // bytes of the packet still to come
  let skip = 0; // in a SUBSCRIBE: bytes before the next filter length
  let filterLength = 0;
  let filterLengthBytes = 0;
  let filters = 0;
  return function feed(chunk: Buffer): PacketCut | null {
    let i = 0;
    while (i < chunk.length) {
      if (state === 'type') {
        subscribe = chunk[i++] >> 4 === SUBSCRIBE;
        state = 'length';
        length = 0; multiplier = 1; lengthBytes = 0;
        continue;
      }
      if (state === 'length') {
        const byte = chunk[i++];
        length += (byte & 0x7f) * multiplier;
        multiplier *= 128;
        lengthBytes++;
        if (byte & 0x80) {
          if (lengthBytes === MAX_VARINT_BYTES) return { reason: 'packet_too_large', declared: Infinity }; // malformed: mqtt-packet refuses it too
          continue;
        }
        if (length > limits.maxBytes) return { reason: 'packet_too_large', declared: length };
        rest = length;
        if (subscribe) { state = 'skip'; skip = 2; filters = 0; } else state = 'body';
      } else if (state === 'filterLength') {
        filterLength = filterLength * 256 + chunk[i++];
        rest--;
        if (++filterLengthBytes === 2) {
          if (++filters > limits.maxFilters) return { reason: 'too_many_filters', filters };
          state = 'skip';
          skip = filterLength + 1; // the filter, then its QoS byte
        }
      } else {
        const n = Math.min(rest, chunk.length - i, state === 'skip' ? skip : rest);
        i += n;
        rest -= n;
        if (state === 'skip') {
          skip -= n;
          if (skip === 0) { state = 'filterLength'; filterLength = 0; filterLengthBytes = 0; }
        }
      }
      if (rest === 0) state = 'type';
    }
    return null;
  };
}

/**
 * Watches what Aedes reads from `conn` and destroys the connection on the first packet over the limits.
 * Call after `broker.handle(conn)`: Aedes reads in paused mode ('readable' + read()), and a 'data'
 * listener added then sees each chunk as read() returns it, without switching the stream to flowing mode.
 * The destroyed connection is read no further; Aedes has buffered at most the one chunk holding the header
 * (a socket read is at most 64 KiB, a TLS record 16 KiB, a WebSocket message the limit: with a limit above
 * those, an oversize packet is never whole in one chunk, so Aedes never acts on it). A SUBSCRIBE that is whole
 * in the chunk that breaks the limit still reaches Aedes, on a destroyed connection (broker.ts refuses its
 * filters without a word).
 */
export function guardPackets(conn: Duplex, limits: PacketLimits, onCut: (cut: PacketCut) => void): void {
  const feed = packetWatcher(limits);
  const watch = (chunk: Buffer | string) => {
    const cut = feed(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
    if (cut === null) return;
    conn.off('data', watch);
    onCut(cut);
    conn.destroy();
  };
  conn.on('data', watch);
}
