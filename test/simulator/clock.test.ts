import { describe, expect, it } from 'vitest';
import { leadWaitMs, PASS_GAP_MS, passStartTs, scheduleFor, tsAt } from '../../simulator/clock.js';
import { passWait } from '../../simulator/runs.js';

// A 10-minute drive sampled every second, plus a final sample 400 ms after the last full second.
const frames = [...Array.from({ length: 600 }, (_, i) => ({ t: i * 1000 })), { t: 600_400 }];
const duration = 600_400;
const now = Date.UTC(2026, 10, 22, 12, 0, 0);
const HOUR = 3_600_000;

describe('scheduleFor', () => {
  it('speed 1 keeps real time: each frame is sent at now + t and stamped with its send time', () => {
    const schedule = scheduleFor(frames, 1, now);
    schedule.forEach((s, i) => {
      expect(s.sendAt).toBe(now + frames[i].t);
      expect(s.ts).toBe(s.sendAt);
    });
  });

  it('speed 10 plays the drive in a tenth of its duration', () => {
    const schedule = scheduleFor(frames, 10, now);
    expect(schedule[0].sendAt).toBe(now);
    expect(schedule.at(-1)!.sendAt - schedule[0].sendAt).toBeCloseTo(duration / 10, 6);
    expect(schedule[1].sendAt - schedule[0].sendAt).toBeCloseTo(100, 6);
  });

  it('speed 10 stamps the first frame when it is sent and the rest at the pace of the drive, ahead of their sending', () => {
    const schedule = scheduleFor(frames, 10, now);
    expect(schedule[0].ts).toBe(now);
    expect(schedule.at(-1)!.ts).toBe(now + duration);
    for (const s of schedule) expect(s.ts).toBeGreaterThanOrEqual(s.sendAt);
  });

  it("stamps from the dummy's clock when it is ahead", () => {
    const schedule = scheduleFor(frames, 50, now, now + HOUR);
    expect(schedule[0]).toEqual({ sendAt: now, ts: now + HOUR });
    expect(schedule.at(-1)!.ts).toBe(now + HOUR + duration);
  });

  it.each([1, 10, 200])('speed %d keeps ts differences equal to drive-time differences', (speed) => {
    const schedule = scheduleFor(frames, speed, now);
    schedule.forEach((s, i) => expect(s.ts - schedule[0].ts).toBe(frames[i].t));
  });

  it('gives a stop-time stamp on the same clock', () => {
    const schedule = scheduleFor(frames, 10, now, now + 5000);
    expect(tsAt(300_000, now + 5000)).toBe(schedule[300].ts);
  });

  it('refuses a speed below 1', () => {
    expect(() => scheduleFor(frames, 0.5, now)).toThrow(/speed must be a number >= 1/);
  });
});

describe("a dummy's clock", () => {
  it('starts a pass now, or just after the last stamp when that is later', () => {
    expect(passStartTs(null, now)).toBe(now);
    expect(passStartTs(now - 10_000, now)).toBe(now);
    expect(passStartTs(now + 60_000, now)).toBe(now + 60_000 + PASS_GAP_MS);
  });

  it('does not wait while the lead stays within the bound, whatever the earlier runs left ahead', () => {
    // 8 minutes at 50×: the pass itself leads by 7.8 min; an hour ahead already.
    expect(leadWaitMs(null, 480_000, 50, 6 * HOUR, now)).toBe(0);
    expect(leadWaitMs(now + HOUR, 480_000, 50, 6 * HOUR, now)).toBe(0);
    expect(passWait(now + HOUR, 480_000, 50, 6 * HOUR, now)).toEqual({ waitMs: 0, reason: null, startTs: now + HOUR + PASS_GAP_MS });
  });

  it('waits, saying why, only as long as the last frame would lead by more than the bound', () => {
    const last = now + 6 * HOUR;
    const wait = passWait(last, 480_000, 50, 6 * HOUR, now);
    // End stamp last + gap + 8 min, sent 9.6 s after the start: lead − bound.
    expect(wait.waitMs).toBeCloseTo(PASS_GAP_MS + 480_000 - 480_000 / 50, 6);
    expect(wait.reason).toMatch(/the dummy's clock is 6\.0 h ahead of real time .* at most 6\.0 h ahead \(--dummy-max-lead-ms\)/);
    // After waiting, it fits.
    expect(leadWaitMs(last, 480_000, 50, 6 * HOUR, now + wait.waitMs)).toBeCloseTo(0, 6);
  });
});
