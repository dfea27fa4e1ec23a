import { describe, expect, it } from 'vitest';
import { scheduleFor, tsAt } from '../../simulator/clock.js';

// A 10-minute drive sampled every second, plus a final sample 400 ms after the last full second.
const frames = [...Array.from({ length: 600 }, (_, i) => ({ t: i * 1000 })), { t: 600_400 }];
const duration = 600_400;
const now = Date.UTC(2026, 10, 22, 12, 0, 0);

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

  it("speed 10 stamps the last frame with its own send time (within 1 ms) and the first `duration` earlier", () => {
    const schedule = scheduleFor(frames, 10, now);
    const last = schedule.at(-1)!;
    expect(last.sendAt - last.ts).toBeGreaterThanOrEqual(0);
    expect(last.sendAt - last.ts).toBeLessThan(1);
    expect(last.ts - schedule[0].ts).toBe(duration);
  });

  it.each([1, 2, 10, 200])('speed %d never stamps a frame later than it is sent', (speed) => {
    for (const s of scheduleFor(frames, speed, now)) expect(s.ts).toBeLessThanOrEqual(s.sendAt);
  });

  it.each([1, 10, 200])('speed %d keeps ts differences equal to drive-time differences', (speed) => {
    const schedule = scheduleFor(frames, speed, now);
    schedule.forEach((s, i) => expect(s.ts - schedule[0].ts).toBe(frames[i].t));
  });

  it('gives a stop-time stamp on the same clock', () => {
    const schedule = scheduleFor(frames, 10, now);
    expect(tsAt(300_000, duration, 10, now)).toBe(schedule[300].ts);
  });

  it('refuses a speed below 1 (it would stamp frames in the future)', () => {
    expect(() => scheduleFor(frames, 0.5, now)).toThrow(/speed must be a number >= 1/);
  });
});
