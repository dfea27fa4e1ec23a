import mqttPacket from 'mqtt-packet';
import { describe, expect, it } from 'vitest';
import { packetWatcher, type PacketCut } from '../../gateway/packet-guard.js';

const packet = (type: number, length: number) => {
  const len: number[] = [];
  let n = length;
  do { let b = n % 128; n = Math.floor(n / 128); if (n > 0) b |= 0x80; len.push(b); } while (n > 0);
  return Buffer.concat([Buffer.from([type, ...len]), Buffer.alloc(length, 1)]);
};
/** A watcher of sizes only, and the declared length it reports. */
const sizes = (maxBytes: number) => {
  const feed = packetWatcher({ maxBytes, maxFilters: Infinity });
  return (chunk: Buffer) => {
    const cut = feed(chunk);
    return cut?.reason === 'packet_too_large' ? cut.declared : cut;
  };
};
const subscribe = (messageId: number, topics: string[]) => mqttPacket.generate({
  cmd: 'subscribe', messageId, subscriptions: topics.map((topic) => ({ topic, qos: 1 as const })),
});
const chunked = (stream: Buffer, size: number, feed: (b: Buffer) => PacketCut | null) => {
  for (let i = 0; i < stream.length; i += size) {
    const cut = feed(stream.subarray(i, i + size));
    if (cut) return { cut, at: i };
  }
  return null;
};

describe('MQTT fixed header watcher', () => {
  it('follows packets across any chunking and lets through those within the limit', () => {
    const stream = Buffer.concat([packet(0x10, 200), packet(0xc0, 0), packet(0x30, 1000), packet(0x30, 127), packet(0x30, 128)]);
    for (const size of [1, 2, 3, 7, 64, stream.length]) {
      const feed = sizes(1000);
      for (let i = 0; i < stream.length; i += size) expect(feed(stream.subarray(i, i + size))).toBeNull();
    }
  });

  it('reports the declared length of the first packet over the limit, even when its header is split', () => {
    const feed = sizes(1000);
    const stream = Buffer.concat([packet(0x30, 10), Buffer.from([0x10, 0xff, 0xff])]);
    expect(feed(stream)).toBeNull();
    expect(feed(Buffer.from([0xff, 0x7f]))).toBe(268_435_455);
    expect(sizes(1000)(packet(0x30, 1001).subarray(0, 3))).toBe(1001);
  });

  it('reports a remaining length longer than 4 bytes (malformed)', () => {
    expect(sizes(1 << 30)(Buffer.from([0x10, 0x80, 0x80, 0x80, 0x80, 0x01]))).toBe(Infinity);
  });
});

describe('MQTT SUBSCRIBE filter count', () => {
  const topics = (n: number, prefix = 'devices/x/commands') => Array.from({ length: n }, (_, i) => `${prefix}/${'z'.repeat(i % 300)}${i}`);

  it('lets through SUBSCRIBEs of up to the limit, between other packets, across any chunking', () => {
    const stream = Buffer.concat([packet(0x30, 300), subscribe(1, topics(8)), packet(0xc0, 0), subscribe(2, topics(1)), subscribe(3, topics(8)), packet(0x30, 5)]);
    for (const size of [1, 2, 3, 5, 64, 1000, stream.length]) {
      expect(chunked(stream, size, packetWatcher({ maxBytes: 100_000, maxFilters: 8 }))).toBeNull();
    }
  });

  it('reports a SUBSCRIBE at its filter over the limit, before the rest of it arrives', () => {
    const big = subscribe(4, topics(10_000, 'a'));
    const stream = Buffer.concat([subscribe(1, topics(3)), big]);
    for (const size of [1, 7, 4096]) {
      const found = chunked(stream, size, packetWatcher({ maxBytes: 10_000_000, maxFilters: 8 }));
      expect(found?.cut).toEqual({ reason: 'too_many_filters', filters: 9 });
      expect(found!.at).toBeLessThan(subscribe(1, topics(3)).length + subscribe(4, topics(9, 'a')).length);
    }
  });

  it('does not count bytes of other packets that look like a SUBSCRIBE', () => {
    // A PUBLISH whose payload holds SUBSCRIBE packets of many filters.
    const inner = subscribe(5, topics(50));
    const publish = mqttPacket.generate({ cmd: 'publish', topic: 't', payload: Buffer.concat([inner, inner]), qos: 0, dup: false, retain: false });
    expect(chunked(publish, 3, packetWatcher({ maxBytes: 100_000, maxFilters: 1 }))).toBeNull();
  });
});
