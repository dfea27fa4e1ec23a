// A dummy device: a real MQTT client that plays a run's frames at their scheduled times and answers the platform's
// commands (device-commands.ts): set-interval changes which frames it sends (pacing.ts), clear-dtcs what they report.
import { randomUUID } from 'node:crypto';
import { scheduleFor, tsAt, type ScheduledSend } from './clock.js';
import { createCommandResponder } from './device-commands.js';
import { openLink, type LinkLogger } from './device-link.js';
import { buildRunFrames, shutdownAfter, type GatewayFrame, type RunFrame } from './frames.js';
import { DEFAULT_INTERVAL_MS } from './motion.js';
import { createPacer } from './pacing.js';
import type { StoredRoute } from './route.js';
import type { Scenario } from './scenarios.js';
import { sleepUntil } from '../lib/sleep.js';

export interface DeviceProgress {
  framesSent: number;
  /** Frames the run sends in all, at the interval set now (set-interval changes it). */ framesTotal: number;
  /** m along the route at the last frame sent. */ distance: number;
  /** s of wall-clock time until the last frame. */ remainingSeconds: number;
  /** km/h at the last frame sent. */ lastSpeed: number;
}

export interface DeviceSummary {
  /** Frames published (a duplicate counts once; a gap array counts its frames). */ framesSent: number;
  /** m driven. */ distance: number;
  /** ms of drive time covered (not wall-clock). */ duration: number;
  /** epoch ms stamped on the last frame sent; null when none was. */ lastTs: number | null;
  startedAt: Date;
  endedAt: Date;
  /** True when stop() ended the run early. */ stopped: boolean;
}

/** pino-compatible subset: what the device and its link log through. */
export type DeviceLogger = LinkLogger;

export interface DeviceOptions {
  mqttUrl: string;
  deviceId: string;
  secret: string;
  route: StoredRoute;
  vin: string;
  /** 1 = real time; N plays the drive in 1/N of its duration (see clock.ts). */ speed?: number;
  /**
   * epoch ms stamped on the first frame: a dummy's clock (clock.ts), its stamps running ahead of the wall clock at a
   * speed factor. Without it the drive is laid onto the immediate past (its last frame stamped when it is sent), as
   * any device not a dummy needs: the gateway refuses its frames more than --max-future-skew-ms ahead.
   */
  startTs?: number;
  scenarios?: readonly Scenario[];
  intervalMs?: number;
  seed?: number;
  runId?: string;
  onProgress?: (progress: DeviceProgress) => void;
  /** ms between reconnect attempts (mqtt.js default 1000), and offline during a reboot. */ reconnectPeriodMs?: number;
  /** ms to wait for the first connection before failing the run. */ connectTimeoutMs?: number;
  logger?: DeviceLogger;
}

export interface DeviceHandle {
  /** Resolves after the last frame is acknowledged (QoS 1) and the client has disconnected. */
  done: Promise<DeviceSummary>;
  /** Ends early: sends held frames and a shutdown frame, then disconnects; resolves like done. */
  stop(): Promise<DeviceSummary>;
  progress(): DeviceProgress;
}

const STOP_GRACE_MS = 5000;
const noopLogger: DeviceLogger = { debug: () => {}, warn: () => {} };

export function startDevice(opts: DeviceOptions): DeviceHandle {
  const speed = opts.speed ?? 1;
  if (!(speed >= 1) || !Number.isFinite(speed)) throw new RangeError(`speed must be a number >= 1, got ${speed}`);
  const log = opts.logger ?? noopLogger;
  const runId = opts.runId ?? randomUUID();
  const frames = buildRunFrames(opts.route, { vin: opts.vin, intervalMs: opts.intervalMs, scenarios: opts.scenarios, seed: opts.seed, runId });
  const pacer = createPacer(frames, opts.intervalMs ?? DEFAULT_INTERVAL_MS);
  const topic = `devices/${opts.deviceId}/frames`;
  const abort = new AbortController();
  const state = {
    sent: 0, index: -1, schedule: [] as ScheduledSend[], startedAt: 0, startTs: 0, lastFrame: undefined as GatewayFrame | undefined,
    /** Ids given so far: frame ids are "<runId>-<seq>" over the frames sent, whatever the interval. */ seq: 0,
    dtcsCleared: false, held: [] as GatewayFrame[],
  };
  const acks: Promise<void>[] = [];
  const responder = createCommandResponder({
    vin: opts.vin,
    setIntervalMs: (ms) => pacer.setInterval(ms),
    dtcs: () => [...(state.lastFrame?.dtcs ?? [])],
    clearDtcs: () => {
      const cleared = [...(state.lastFrame?.dtcs ?? [])];
      state.dtcsCleared = true;
      return cleared;
    },
  }, { silent: opts.scenarios?.includes('unresponsive'), log, deviceId: opts.deviceId });
  const link = openLink({
    mqttUrl: opts.mqttUrl, deviceId: opts.deviceId, secret: opts.secret, reconnectPeriodMs: opts.reconnectPeriodMs ?? 1000, log,
    onCommand: (text) => {
      const answer = responder.answer(text);
      if (!answer) return;
      const replied = link.publish(`devices/${opts.deviceId}/responses`, answer.reply);
      acks.push(replied);
      if (answer.reboot) void replied.then(() => link.reboot());
    },
  });

  const publish = (payload: GatewayFrame | GatewayFrame[]) => { acks.push(link.publish(topic, payload)); };

  const progress = (): DeviceProgress => {
    const at = frames[Math.max(0, state.index)];
    const lastSendAt = state.schedule.at(-1)?.sendAt ?? Date.now() + (frames.at(-1)!.t - frames[0].t) / speed;
    return {
      framesSent: state.sent, framesTotal: state.sent + state.held.length + pacer.remaining(), distance: state.index >= 0 ? at.distance : 0,
      remainingSeconds: Math.max(0, (lastSendAt - Date.now()) / 1000), lastSpeed: state.index >= 0 ? at.speed : 0,
    };
  };

  const play = async (): Promise<DeviceSummary> => {
    await link.firstConnect(opts.connectTimeoutMs ?? 30_000, abort.signal);
    state.startedAt = Date.now();
    const driveMs = frames.at(-1)!.t - frames[0].t;
    state.startTs = opts.startTs ?? Math.floor(state.startedAt + driveMs / speed - driveMs);
    state.schedule = scheduleFor(frames, speed, state.startedAt, state.startTs);
    for (let i = 0; i < frames.length && !abort.signal.aborted; i++) {
      await sleepUntil(state.schedule[i].sendAt, abort.signal);
      if (abort.signal.aborted) break;
      const run = pacer.take(i);
      if (!run) continue;
      const frame: GatewayFrame = {
        ...run.frame, id: `${runId}-${state.seq++}`, ts: state.schedule[i].ts, ...(state.dtcsCleared && { dtcs: [] }),
      };
      sendFrame(run, frame);
      state.index = i;
      state.lastFrame = frame;
      opts.onProgress?.(progress());
    }
    if (abort.signal.aborted) sendEarlyShutdown();
    await untilAcked(acks, abort.signal);
    await link.end(abort.signal.aborted);
    const last = frames[Math.max(0, state.index)];
    return {
      framesSent: state.sent, distance: state.index >= 0 ? last.distance : 0, duration: state.index >= 0 ? last.t - frames[0].t : 0,
      lastTs: state.lastFrame?.ts ?? null,
      startedAt: new Date(state.startedAt || Date.now()), endedAt: new Date(), stopped: abort.signal.aborted,
    };
  };

  // gps-gap frames wait in `held` and go out as one array just before the first frame after the gap.
  const sendFrame = (run: RunFrame, frame: GatewayFrame) => {
    if (run.buffered) { state.held.push(frame); return; }
    flushHeld();
    publish(frame);
    if (run.duplicate) publish(frame);
    state.sent += 1;
  };

  const flushHeld = () => {
    if (!state.held.length) return;
    state.sent += state.held.length;
    publish(state.held.splice(0));
  };

  const sendEarlyShutdown = () => {
    flushHeld();
    if (!state.lastFrame || state.lastFrame.kind === 'shutdown') return;
    const driveT = Math.min(frames.at(-1)!.t, (Date.now() - state.startedAt) * speed);
    const ts = Math.max(state.lastFrame.ts, tsAt(driveT, state.startTs));
    state.lastFrame = shutdownAfter(state.lastFrame, `${runId}-${state.seq++}`, ts);
    publish(state.lastFrame);
    state.sent += 1;
  };

  const done = play().catch(async (err: unknown) => {
    await link.end(true).catch(() => undefined);
    throw err;
  });
  return {
    done,
    stop: () => { abort.abort(); return done; },
    progress,
  };
}

/** Waits for every PUBACK; after stop() waits at most STOP_GRACE_MS (the broker may be gone). */
async function untilAcked(acks: Promise<void>[], signal: AbortSignal): Promise<void> {
  const all = Promise.all(acks).then(() => undefined);
  const grace = new Promise<void>((resolve) => {
    const arm = () => setTimeout(resolve, STOP_GRACE_MS).unref();
    if (signal.aborted) arm();
    else signal.addEventListener('abort', arm, { once: true });
  });
  await Promise.race([all, grace]);
}

