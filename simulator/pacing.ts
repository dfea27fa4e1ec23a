// Which of a run's frames a device sends. The run is built once at its own interval (the base: every frame the
// drive could send); a `set-interval` command makes the device send only the frames a whole number of base
// intervals apart, so the route position and speed stay those of the one drive, and the frames it leaves out are
// folded into the next one sent (accelerometer extremes, a collision), as a device reading its sensors between
// two reports would.
import type { AccelWindow } from './obd-model.js';
import type { RunFrame } from './frames.js';

export interface Pacer {
  /**
   * Called for each frame in order when it is due: the frame to send (with what the frames left out since the last
   * one carried), or null when the interval skips it. The first and the last frame are always sent.
   */
  take(i: number): RunFrame | null;
  /** Sets ms between the frames sent from the last one sent on; returns the ms applied (a multiple of the base). */
  setInterval(ms: number): number;
  /** ms between frames now. */
  intervalMs(): number;
  /** Frames still to send after the last one taken, at the interval now. */
  remaining(): number;
}

export function createPacer(frames: readonly RunFrame[], baseMs: number): Pacer {
  const last = frames.length - 1;
  let interval = baseMs;
  let lastTaken = -1;
  let skipped: RunFrame[] = [];
  const due = (i: number, sinceT: number | undefined) => i === last || sinceT === undefined || frames[i].t - sinceT >= interval;

  return {
    take(i) {
      const f = frames[i];
      if (!due(i, frames[lastTaken]?.t)) {
        skipped.push(f);
        return null;
      }
      lastTaken = i;
      const out = skipped.length ? foldIn(f, skipped) : f;
      skipped = [];
      return out;
    },
    setInterval(ms) {
      interval = Math.max(1, Math.ceil(ms / baseMs)) * baseMs;
      return interval;
    },
    intervalMs: () => interval,
    remaining() {
      let n = 0;
      let since = frames[lastTaken]?.t;
      for (let i = lastTaken + 1; i <= last; i++) {
        if (!due(i, since)) continue;
        n += 1;
        since = frames[i].t;
      }
      return n;
    },
  };
}

/** `f` with the accelerometer extremes and the collision of the frames left out before it. */
function foldIn(f: RunFrame, skipped: readonly RunFrame[]): RunFrame {
  const all = [...skipped, f];
  const pick = (key: keyof AccelWindow, agg: (...v: number[]) => number) => agg(...all.map((x) => x.frame.accel[key]));
  const accel: AccelWindow = {
    maxX: pick('maxX', Math.max), maxY: pick('maxY', Math.max), maxZ: pick('maxZ', Math.max),
    minX: pick('minX', Math.min), minY: pick('minY', Math.min), minZ: pick('minZ', Math.min),
  };
  const collision = f.frame.collision ?? skipped.find((x) => x.frame.collision)?.frame.collision;
  return { ...f, frame: { ...f.frame, accel, ...(collision && { collision }) } };
}
