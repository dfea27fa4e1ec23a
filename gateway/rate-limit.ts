// A rate limit per device on what it publishes to its frames topic, in frames/s and bytes/s: a token bucket each,
// `burst` deep, refilled at `perSecond`. The model is EMQX's messages_rate/bytes_rate with their bursts; over the limit
// EMQX's listener limiter stops reading the client's socket, its node limiter drops QoS 0 and refuses QoS 1 with MQTT 5's
// 0x97 "Quota exceeded". Aedes speaks MQTT 3.1.1 only (no negative PUBACK), so here: QoS 0 over the limit is refused
// (dropped, counted) and the connection paused, up to a second, until the device is within its limit; QoS 1 waits, its
// PUBACK held until then. Aedes reads no further packet of a connection while one of its packets is held, so a flooding
// device is read at about its limit (each refusal costs the gateway little, and the refusals are few) and a QoS 1
// device's own window slows it — nothing acknowledged is lost, nothing resent. A waiting payload is held in memory:
// one whose connection closed meanwhile is not taken (unacknowledged, the device sends it again), and a device may
// have at most `waitingBytes` waiting from its open connections (past it the payload is refused, its connection closed),
// so a device reconnecting in a loop cannot pile them up.
//
// A payload is admitted while both buckets hold at least one unit; it then takes all its frames and bytes, which may
// leave a bucket in debt (so a payload larger than the burst still passes, and the long-run rate is the configured
// one). Its frames are counted once it is decoded; an over-limit payload is refused before being decoded. The buckets
// are per gateway process: with several gateways behind a balancer a device's connection is on one of them.
import { setTimeout as sleep } from 'node:timers/promises';

export interface RateLimits {
  /** Frames a second a device may publish in the long run; 0 = no limit on frames. */
  framesPerSecond: number;
  /** Frames it may publish at once (the bucket's depth). */
  framesBurst: number;
  /** Payload bytes a second; 0 = no limit on bytes. */
  bytesPerSecond: number;
  /** Payload bytes at once. */
  bytesBurst: number;
  /**
   * Payload bytes of a device that may wait for their turn (QoS 1/2, each held in memory until taken); a payload past
   * it is refused (its connection closed). One payload may always wait. Omitted: DEFAULT_WAITING_BYTES.
   */
  waitingBytes?: number;
}

export type RateReason = 'rate_frames' | 'rate_bytes';
/** Why a payload cannot be taken at once: over a limit, or within them but behind the device's waiting payloads. */
export type WaitReason = RateReason | 'queued';

/** A waiting payload not taken: its connection closed meanwhile, or the device had too many bytes waiting. */
export class NotTaken extends Error {
  constructor(readonly why: 'gone' | 'rate_queue', message: string) { super(message); }
}

/** Where waiting payloads come from (a connection): once gone, its payloads count no more against the device's cap. */
export interface Waiter { gone(): boolean }

/** Default of RateLimits.waitingBytes: four payloads of the largest default size (256 KiB). */
export const DEFAULT_WAITING_BYTES = 1024 * 1024;

interface Bucket {
  frames: number;
  bytes: number;
  /** ms (performance.now) the buckets were last refilled. */
  at: number;
  /** Payloads waiting for their turn; the bytes of those whose connection was open when last looked at, per connection. */
  waiting: number;
  waitingBytes: number;
  waitingFrom: Map<Waiter, number>;
  /** Settles when the last waiting payload has been taken: the next one waits after it (a device's order holds). */
  tail: Promise<void>;
  /** When the device's last refusal was kept as a dead letter (ms, performance.now); -Infinity: never. */
  letterAt: number;
}

/** A refused device's refusals are kept as one dead letter per this interval; the others are only counted. */
export const REFUSAL_LETTER_MS = 60_000;
/** Longest pause of a connection for a refused QoS 0 payload (ms): short of any keepalive. */
export const REFUSAL_PAUSE_MS = 1000;
/** Bytes of the refused payload its dead letter keeps (a sample, not the flood). */
export const REFUSAL_LETTER_BYTES = 4096;

export interface DeviceRateLimiter {
  /** Whether a payload of the device would be over its limit now, which, or 'queued' behind the device's waiting ones. */
  over(deviceId: string): WaitReason | null;
  /** ms until the device is within its limits again (0: it is). */
  untilWithin(deviceId: string): number;
  /** Takes an admitted payload's frames and bytes from the device's buckets. */
  take(deviceId: string, frames: number, bytes: number): void;
  /**
   * Runs `run` (which takes its payload, synchronously) once the device is within its limits, after the device's
   * payloads already waiting; resolves with what it returned and the ms waited. Rejects with NotTaken, without
   * running `run`, when `from` is gone by then (the payload's connection closed: unacknowledged, the device sends it
   * again) or at once when the device already has `waitingBytes` waiting from connections still open.
   */
  wait<T>(deviceId: string, bytes: number, from: Waiter, run: () => T): Promise<{ value: T; waitedMs: number }>;
  /** Whether a refusal of the device now is the one kept as a dead letter for this interval (and notes it if so). */
  keepLetter(deviceId: string): boolean;
  /** The reason text of a refusal. */
  reason(reason: RateReason): string;
  /** Devices with a bucket (tests: the map is pruned of idle devices). */
  size(): number;
}

/** A waiting payload whose turn is further than this looks again this often whether its connection closed (ms). */
const GONE_CHECK_MS = 1000;

/** Prune idle buckets once the map holds this many (and twice what the last prune left, so pruning stays rare). */
const PRUNE_FROM = 1024;

export function createRateLimiter(limits: RateLimits, now: () => number = () => performance.now()): DeviceRateLimiter {
  const waitingCap = limits.waitingBytes ?? DEFAULT_WAITING_BYTES;
  const framesOn = limits.framesPerSecond > 0;
  const bytesOn = limits.bytesPerSecond > 0;
  const buckets = new Map<string, Bucket>();
  let pruneAt = PRUNE_FROM;

  const refill = (b: Bucket, t: number) => {
    const s = Math.max(0, t - b.at) / 1000;
    b.at = t;
    if (framesOn) b.frames = Math.min(limits.framesBurst, b.frames + s * limits.framesPerSecond);
    if (bytesOn) b.bytes = Math.min(limits.bytesBurst, b.bytes + s * limits.bytesPerSecond);
  };

  const idle = (b: Bucket, t: number) => {
    refill(b, t);
    return b.waiting === 0 && t - b.letterAt >= REFUSAL_LETTER_MS
      && (!framesOn || b.frames >= limits.framesBurst) && (!bytesOn || b.bytes >= limits.bytesBurst);
  };

  const bucket = (deviceId: string): Bucket => {
    let b = buckets.get(deviceId);
    if (b) { refill(b, now()); return b; }
    if (buckets.size >= pruneAt) {
      const t = now();
      for (const [id, old] of buckets) if (idle(old, t)) buckets.delete(id);
      pruneAt = Math.max(PRUNE_FROM, buckets.size * 2);
    }
    b = { frames: limits.framesBurst, bytes: limits.bytesBurst, at: now(), waiting: 0, waitingBytes: 0, waitingFrom: new Map(), tail: Promise.resolve(), letterAt: -Infinity };
    buckets.set(deviceId, b);
    return b;
  };

  const short = (b: Bucket): RateReason | null => {
    if (framesOn && b.frames < 1) return 'rate_frames';
    if (bytesOn && b.bytes < 1) return 'rate_bytes';
    return null;
  };

  /** ms until both buckets hold a unit again. */
  const untilWithin = (b: Bucket) => 1000 * Math.max(
    framesOn ? (1 - b.frames) / limits.framesPerSecond : 0,
    bytesOn ? (1 - b.bytes) / limits.bytesPerSecond : 0,
  );

  return {
    over(deviceId) {
      if (!framesOn && !bytesOn) return null;
      const b = bucket(deviceId);
      return short(b) ?? (b.waiting ? 'queued' : null);
    },
    untilWithin(deviceId) {
      if (!framesOn && !bytesOn) return 0;
      return Math.max(0, Math.ceil(untilWithin(bucket(deviceId))));
    },
    take(deviceId, frames, bytes) {
      if (!framesOn && !bytesOn) return;
      const b = bucket(deviceId);
      if (framesOn) b.frames -= frames;
      if (bytesOn) b.bytes -= bytes;
    },
    wait(deviceId, bytes, from, run) {
      const b = bucket(deviceId);
      for (const [w, n] of b.waitingFrom) if (w.gone()) { b.waitingFrom.delete(w); b.waitingBytes -= n; }
      if (b.waitingBytes && b.waitingBytes + bytes > waitingCap) {
        return Promise.reject(new NotTaken('rate_queue', `payload refused: the device already has ${b.waitingBytes} bytes `
          + `waiting for its rate limit (at most ${waitingCap}); the connection is closed`));
      }
      b.waiting++;
      b.waitingBytes += bytes;
      b.waitingFrom.set(from, (b.waitingFrom.get(from) ?? 0) + bytes);
      const started = now();
      const turn = b.tail.then(async () => {
        try {
          for (;;) {
            if (from.gone()) throw new NotTaken('gone', 'the payload\'s connection closed while it waited');
            refill(b, now());
            if (!short(b)) break;
            await sleep(Math.max(1, Math.min(GONE_CHECK_MS, Math.ceil(untilWithin(b)))), undefined, { ref: false });
          }
        } finally {
          b.waiting--;
          const n = b.waitingFrom.get(from);
          if (n !== undefined) {
            b.waitingBytes -= bytes;
            if (n > bytes) b.waitingFrom.set(from, n - bytes); else b.waitingFrom.delete(from);
          }
        }
        return { value: run(), waitedMs: now() - started };
      });
      b.tail = turn.then(() => undefined, () => undefined);
      return turn;
    },
    keepLetter(deviceId) {
      const b = bucket(deviceId);
      const t = now();
      if (t - b.letterAt < REFUSAL_LETTER_MS) return false;
      b.letterAt = t;
      return true;
    },
    reason(reason) {
      const [rate, burst, unit] = reason === 'rate_frames'
        ? [limits.framesPerSecond, limits.framesBurst, 'frames'] : [limits.bytesPerSecond, limits.bytesBurst, 'bytes'];
      return `payload refused: the device is over its rate limit of ${rate} ${unit}/s (burst ${burst}); `
        + `its further refusals within ${REFUSAL_LETTER_MS / 1000} s are counted, not kept`;
    },
    size: () => buckets.size,
  };
}
