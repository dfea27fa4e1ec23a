// Time compression. With speed N the drive plays in 1/N of its duration and is stamped as if it
// had started `duration` before its last frame is sent: the last ts is the moment it is sent,
// no ts is in the future, and ts differences stay those of the real drive.

export interface ScheduledSend {
  /** epoch ms at which to publish. */ sendAt: number;
  /** epoch ms to put in the frame. */ ts: number;
}

/** `frames[i].t` = ms since the drive's start (ascending); `now` = epoch ms of the first send. */
export function scheduleFor(frames: readonly { t: number }[], speed: number, now: number): ScheduledSend[] {
  if (!(speed >= 1) || !Number.isFinite(speed)) throw new RangeError(`speed must be a number >= 1, got ${speed}`);
  if (!frames.length) return [];
  const first = frames[0].t;
  const duration = frames[frames.length - 1].t - first;
  const lastSendAt = now + duration / speed;
  // floor: a ts never runs ahead of its send time by a rounding fraction.
  return frames.map((f) => ({ sendAt: now + (f.t - first) / speed, ts: Math.floor(lastSendAt - (duration - (f.t - first))) }));
}

/** ts for drive time t (ms) under the same schedule, e.g. for a shutdown sent on stop(). */
export function tsAt(t: number, durationMs: number, speed: number, now: number): number {
  return Math.floor(now + durationMs / speed - (durationMs - t));
}
