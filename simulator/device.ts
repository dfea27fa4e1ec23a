// A dummy device: a real MQTT client that plays a run's frames at their scheduled times.
import { randomUUID } from 'node:crypto';
import { connect, type IClientOptions, type MqttClient } from 'mqtt';
import { scheduleFor, tsAt, type ScheduledSend } from './clock.js';
import { buildRunFrames, shutdownAfter, type GatewayFrame, type RunFrame } from './frames.js';
import type { StoredRoute } from './route.js';
import type { Scenario } from './scenarios.js';
import { sleepUntil } from '../lib/sleep.js';

export interface DeviceProgress {
  framesSent: number;
  framesTotal: number;
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

/** pino-compatible subset. */
export interface DeviceLogger {
  debug(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
}

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
  /** ms between reconnect attempts (mqtt.js default 1000). */ reconnectPeriodMs?: number;
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
const NOT_AUTHORIZED = new Set([4, 5, 134, 135]);
const noopLogger: DeviceLogger = { debug: () => {}, warn: () => {} };

export function startDevice(opts: DeviceOptions): DeviceHandle {
  const speed = opts.speed ?? 1;
  if (!(speed >= 1) || !Number.isFinite(speed)) throw new RangeError(`speed must be a number >= 1, got ${speed}`);
  const log = opts.logger ?? noopLogger;
  const runId = opts.runId ?? randomUUID();
  const frames = buildRunFrames(opts.route, { vin: opts.vin, intervalMs: opts.intervalMs, scenarios: opts.scenarios, seed: opts.seed, runId });
  const topic = `devices/${opts.deviceId}/frames`;
  const abort = new AbortController();
  const state = { sent: 0, index: -1, schedule: [] as ScheduledSend[], startedAt: 0, startTs: 0, lastFrame: undefined as GatewayFrame | undefined };
  const acks: Promise<void>[] = [];
  const client = connect(opts.mqttUrl, clientOptions(opts));
  client.on('error', (err) => log.warn({ err, deviceId: opts.deviceId }, 'mqtt client error'));
  client.on('reconnect', () => log.debug({ deviceId: opts.deviceId }, 'reconnecting'));

  const publish = (payload: GatewayFrame | GatewayFrame[]) => {
    // Never rejects: a publish lost when stop() forces the client closed is logged, not thrown.
    acks.push(client.publishAsync(topic, JSON.stringify(payload), { qos: 1 }).then(
      () => undefined,
      (err: unknown) => log.warn({ err, deviceId: opts.deviceId }, 'publish not acknowledged'),
    ));
  };

  const progress = (): DeviceProgress => {
    const at = frames[Math.max(0, state.index)];
    const lastSendAt = state.schedule.at(-1)?.sendAt ?? Date.now() + (frames.at(-1)!.t - frames[0].t) / speed;
    return {
      framesSent: state.sent, framesTotal: frames.length, distance: state.index >= 0 ? at.distance : 0,
      remainingSeconds: Math.max(0, (lastSendAt - Date.now()) / 1000), lastSpeed: state.index >= 0 ? at.speed : 0,
    };
  };

  const play = async (): Promise<DeviceSummary> => {
    await firstConnect(client, opts.connectTimeoutMs ?? 30_000, abort.signal);
    state.startedAt = Date.now();
    const driveMs = frames.at(-1)!.t - frames[0].t;
    state.startTs = opts.startTs ?? Math.floor(state.startedAt + driveMs / speed - driveMs);
    state.schedule = scheduleFor(frames, speed, state.startedAt, state.startTs);
    const held: GatewayFrame[] = [];
    for (let i = 0; i < frames.length && !abort.signal.aborted; i++) {
      await sleepUntil(state.schedule[i].sendAt, abort.signal);
      if (abort.signal.aborted) break;
      const frame = { ...frames[i].frame, ts: state.schedule[i].ts };
      sendFrame(frames[i], frame, held);
      state.index = i;
      state.lastFrame = frame;
      opts.onProgress?.(progress());
    }
    if (abort.signal.aborted) sendEarlyShutdown(held);
    await untilAcked(acks, abort.signal);
    await client.endAsync(abort.signal.aborted);
    const last = frames[Math.max(0, state.index)];
    return {
      framesSent: state.sent, distance: state.index >= 0 ? last.distance : 0, duration: state.index >= 0 ? last.t - frames[0].t : 0,
      lastTs: state.lastFrame?.ts ?? null,
      startedAt: new Date(state.startedAt || Date.now()), endedAt: new Date(), stopped: abort.signal.aborted,
    };
  };

  // gps-gap frames wait in `held` and go out as one array just before the first frame after the gap.
  const sendFrame = (run: RunFrame, frame: GatewayFrame, held: GatewayFrame[]) => {
    if (run.buffered) { held.push(frame); return; }
    flushHeld(held);
    publish(frame);
    if (run.duplicate) publish(frame);
    state.sent += 1;
  };

  const flushHeld = (held: GatewayFrame[]) => {
    if (!held.length) return;
    state.sent += held.length;
    publish(held.splice(0));
  };

  const sendEarlyShutdown = (held: GatewayFrame[]) => {
    flushHeld(held);
    if (!state.lastFrame || state.lastFrame.kind === 'shutdown') return;
    const driveT = Math.min(frames.at(-1)!.t, (Date.now() - state.startedAt) * speed);
    const ts = Math.max(state.lastFrame.ts, tsAt(driveT, state.startTs));
    state.lastFrame = shutdownAfter(state.lastFrame, `${runId}-${state.index + 1}`, ts);
    publish(state.lastFrame);
    state.sent += 1;
  };

  const done = play().catch(async (err: unknown) => {
    await client.endAsync(true).catch(() => undefined);
    throw err;
  });
  return {
    done,
    stop: () => { abort.abort(); return done; },
    progress,
  };
}

function clientOptions(opts: DeviceOptions): IClientOptions {
  return {
    clientId: opts.deviceId, username: opts.deviceId, password: opts.secret,
    clean: true, reconnectPeriod: opts.reconnectPeriodMs ?? 1000, connectTimeout: 10_000,
  };
}

/** Resolves on the first connack or on stop(); rejects on refused credentials or after timeoutMs. */
function firstConnect(client: MqttClient, timeoutMs: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(() => finish(new Error(`no MQTT connection after ${timeoutMs} ms`)), timeoutMs);
    const onError = (err: Error & { code?: number }) => {
      if (err.code !== undefined && NOT_AUTHORIZED.has(err.code)) finish(new Error(`MQTT connection refused: ${err.message}`));
    };
    const finish = (err?: Error) => {
      clearTimeout(timer);
      client.off('connect', onConnect);
      client.off('error', onError);
      signal.removeEventListener('abort', onConnect);
      if (err) reject(err);
      else resolve();
    };
    const onConnect = () => finish();
    client.on('connect', onConnect);
    client.on('error', onError);
    signal.addEventListener('abort', onConnect, { once: true });
  });
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

