// Run time. A pass at speed N is sent in 1/N of its drive time and stamped on the dummy's own clock: from
// `startTs` (the moment it starts, or just after the dummy's previous stamp) on, at the drive's own pace. So
// ts differences are those of the real drive, a pass never stamps before anything done before it started,
// and at N > 1 the stamps run ahead of the wall clock (the gateway lets a dummy lead; lib/config.ts dummyMaxLeadMs).

export interface ScheduledSend {
  /** epoch ms at which to publish. */ sendAt: number;
  /** epoch ms to put in the frame. */ ts: number;
}

/** ms between a dummy's last stamp and the first stamp of its next pass. */
export const PASS_GAP_MS = 1000;

/**
 * `frames[i].t` = ms since the drive's start (ascending); `now` = epoch ms of the first send; `startTs` = the
 * first frame's stamp (default `now`).
 */
export function scheduleFor(frames: readonly { t: number }[], speed: number, now: number, startTs = now): ScheduledSend[] {
  if (!(speed >= 1) || !Number.isFinite(speed)) throw new RangeError(`speed must be a number >= 1, got ${speed}`);
  if (!frames.length) return [];
  const first = frames[0].t;
  return frames.map((f) => ({ sendAt: now + (f.t - first) / speed, ts: Math.round(startTs + (f.t - first)) }));
}

/** ts for drive time t (ms) under the same schedule, e.g. for a shutdown sent on stop(). */
export function tsAt(t: number, startTs: number): number {
  return Math.round(startTs + t);
}

/** Where a dummy's next pass starts on its clock: now, or just after its last stamp when that is later. */
export function passStartTs(lastStamp: number | null, now = Date.now()): number {
  return lastStamp === null ? now : Math.max(now, lastStamp + PASS_GAP_MS);
}

/**
 * ms to wait before a pass of `driveMs` at `speed` may start so that its last stamp leads the wall clock by at most
 * `maxLeadMs` when it is sent (the lead is largest at the last frame).
 */
export function leadWaitMs(lastStamp: number | null, driveMs: number, speed: number, maxLeadMs: number, now = Date.now()): number {
  const start = passStartTs(lastStamp, now);
  const lead = start + driveMs - (now + driveMs / speed);
  // Waiting only helps while the dummy's clock is ahead: a pass from now leads by its own (1 − 1/N)·driveMs.
  return Math.max(0, Math.min(lead - maxLeadMs, start - now));
}

/** ms one pass leads the wall clock by at its end when it starts now: over the allowed lead, no wait helps. */
export const passLeadMs = (driveMs: number, speed: number) => driveMs * (1 - 1 / speed);
