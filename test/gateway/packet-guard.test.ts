import { describe, expect, it } from 'vitest';
import { fixedHeaderWatcher } from '../../gateway/packet-guard.js';

const packet = (type: number, length: number) => {
  const len: number[] = [];
  let n = length;
  do { let b = n % 128; n = Math.floor(n / 128); if (n > 0) b |= 0x80; len.push(b); } while (n > 0);
  return Buffer.concat([Buffer.from([type, ...len]), Buffer.alloc(length, 1)]);
};

describe('MQTT fixed header watcher', () => {
  it('follows packets across any chunking and lets through those within the limit', () => {
    const stream = Buffer.concat([packet(0x10, 200), packet(0xc0, 0), packet(0x30, 1000), packet(0x30, 127), packet(0x30, 128)]);
    for (const size of [1, 2, 3, 7, 64, stream.length]) {
      const feed = fixedHeaderWatcher(1000);
      for (let i = 0; i < stream.length; i += size) expect(feed(stream.subarray(i, i + size))).toBeNull();
    }
  });

  it('reports the declared length of the first packet over the limit, even when its header is split', () => {
    const feed = fixedHeaderWatcher(1000);
    const stream = Buffer.concat([packet(0x30, 10), Buffer.from([0x10, 0xff, 0xff])]);
    expect(feed(stream)).toBeNull();
    expect(feed(Buffer.from([0xff, 0x7f]))).toBe(268_435_455);
    expect(fixedHeaderWatcher(1000)(packet(0x30, 1001).subarray(0, 3))).toBe(1001);
  });

  it('reports a remaining length longer than 4 bytes (malformed)', () => {
    expect(fixedHeaderWatcher(1 << 30)(Buffer.from([0x10, 0x80, 0x80, 0x80, 0x80, 0x01]))).toBe(Infinity);
  });
});
