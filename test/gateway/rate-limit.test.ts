import { describe, expect, it } from 'vitest';
import { createRateLimiter, REFUSAL_LETTER_MS } from '../../gateway/rate-limit.js';

/** A limiter on a clock the test moves (ms). */
function limiter(limits: Partial<Parameters<typeof createRateLimiter>[0]>) {
  let t = 0;
  const l = createRateLimiter({ framesPerSecond: 0, framesBurst: 0, bytesPerSecond: 0, bytesBurst: 0, ...limits }, () => t);
  return { l, advance: (ms: number) => { t += ms; } };
}

describe('the per-device rate limit', () => {
  it('admits payloads while the bucket holds a frame, lets the last one go into debt, and refills at the rate', () => {
    const { l, advance } = limiter({ framesPerSecond: 10, framesBurst: 25 });
    const admitted: number[] = [];
    for (let k = 0; k < 5; k++) if (!l.over('a')) { l.take('a', 10, 0); admitted.push(k); }
    expect(admitted).toEqual([0, 1, 2]); // 25 → 15 → 5 → -5
    expect(l.over('a')).toBe('rate_frames');
    expect(l.untilWithin('a')).toBe(600); // from -5 to 1 frame at 10 frames/s
    advance(500); // -5 + 5 = 0: not yet a frame
    expect(l.over('a')).toBe('rate_frames');
    advance(100);
    expect(l.over('a')).toBeNull();
    expect(l.untilWithin('a')).toBe(0);
    expect(l.over('b')).toBeNull(); // another device has its own bucket
  });

  it('limits bytes on their own, and nothing when both rates are 0', () => {
    const { l } = limiter({ bytesPerSecond: 100, bytesBurst: 1000 });
    l.take('a', 1_000_000, 1500);
    expect(l.over('a')).toBe('rate_bytes');
    const off = limiter({}).l;
    off.take('a', 1_000_000, 1_000_000);
    expect(off.over('a')).toBeNull();
    expect(off.size()).toBe(0);
  });

  it('keeps one refusal a minute per device as a dead letter', () => {
    const { l, advance } = limiter({ framesPerSecond: 1, framesBurst: 1 });
    expect([l.keepLetter('a'), l.keepLetter('a'), l.keepLetter('b')]).toEqual([true, false, true]);
    advance(REFUSAL_LETTER_MS);
    expect(l.keepLetter('a')).toBe(true);
  });

  it('answers "queued", not a limit, for a device within its limits whose other payloads still wait', async () => {
    const { l, advance } = limiter({ framesPerSecond: 1, framesBurst: 1 });
    l.take('a', 1, 0);
    const waiting = l.wait('a', 10, { gone: () => false }, () => { l.take('a', 1, 0); return 'taken'; });
    advance(1000); // within again, the waiting payload not yet woken
    expect(l.over('a')).toBe('queued');
    expect((await waiting).value).toBe('taken');
    expect(l.over('a')).toBe('rate_frames'); // it took the frame
  });

  it('does not take a waiting payload whose connection closed, nor let a device keep more than its waiting bytes', async () => {
    const { l, advance } = limiter({ framesPerSecond: 1, framesBurst: 1, waitingBytes: 100 });
    l.take('a', 1, 0);
    let gone = false;
    const taken: string[] = [];
    const first = l.wait('a', 60, { gone: () => gone }, () => taken.push('first'));
    const over = l.wait('a', 60, { gone: () => false }, () => taken.push('over'));
    await expect(over).rejects.toMatchObject({ why: 'rate_queue' });
    gone = true; // the first connection closed: its bytes count no more, another connection's payload may wait
    const next = l.wait('a', 60, { gone: () => false }, () => { l.take('a', 1, 0); return 'next'; });
    advance(1000);
    await expect(first).rejects.toMatchObject({ why: 'gone' });
    expect((await next).value).toBe('next');
    expect(taken).toEqual([]);
  });

  it('forgets the devices whose buckets are full again, so the map holds only the recent ones', () => {
    const { l, advance } = limiter({ framesPerSecond: 100, framesBurst: 100 });
    for (let k = 0; k < 3000; k++) { l.take(`d${k}`, 50, 0); advance(1); }
    expect(l.size()).toBeLessThan(2100);
    advance(REFUSAL_LETTER_MS);
    for (let k = 0; k < 3000; k++) l.take(`e${k}`, 50, 0);
    expect(l.size()).toBeLessThanOrEqual(4096);
  });
});
