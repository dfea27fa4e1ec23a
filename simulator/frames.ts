// The frames one run sends, in the gateway frame format: startup, telemetry every interval,
// shutdown; scenarios add their marks (docs/concepts/simulator.md#scenarios lists them).
import { randomUUID } from 'node:crypto';
import { planDrive, type DrivePlan, type DriveSample } from './motion.js';
import { encodePids } from './obd-encode.js';
import { createObdModel, type AccelWindow, type Battery } from './obd-model.js';
import { createRng, seedFromString } from './prng.js';
import type { MotionRoute } from './motion.js';
import type { Scenario } from './scenarios.js';

export type FrameKind = 'startup' | 'telemetry' | 'shutdown';

export interface GatewayFrame {
  /** "<runId>-<seq>", unique per frame; a re-sent frame keeps its id. */ id: string;
  /** epoch ms of the reading. */ ts: number;
  kind: FrameKind;
  /** km/h for speed, degrees for heading. */
  location: { lat: number; lon: number; speed: number; heading: number };
  /** m/s², extremes since the previous frame. */ accel: AccelWindow;
  /** Mode 01 PID (hex) → data bytes (hex). */ pids: Record<string, string>;
  /** Startup only. */ vin?: string;
  /** Startup only: resting and cranking voltage. */ battery?: Battery;
  /** Mode 03 codes stored now; [] once cleared. */ dtcs?: string[];
  collision?: { peakG: number };
}

export interface RunFrame {
  /** ms since the start of the drive. */ t: number;
  /** m along the route, km/h, for progress reports. */ distance: number;
  speed: number;
  frame: GatewayFrame;
  /** gps-gap: held by the device and sent late, as one JSON array, when the gap ends. */ buffered?: boolean;
  /** duplicates: published twice with the same id. */ duplicate?: boolean;
}

export interface RunOptions {
  vin: string;
  intervalMs?: number;
  scenarios?: readonly Scenario[];
  /** Makes every value repeatable; default derived from runId. */ seed?: number;
  /** ts = startTime + t; default now. */ startTime?: Date;
  runId?: string;
}

export const DTC_CODE = 'P0300';
/** Fractions of the drive time. */
const WINDOWS = { dtcOn: 0.4, dtcOff: 0.7, gapFrom: 0.45, gapTo: 0.65 };
const G = 9.80665;
const VIN = /^[A-HJ-NPR-Z0-9]{17}$/;

export function buildRunFrames(route: MotionRoute, opts: RunOptions): RunFrame[] {
  if (!VIN.test(opts.vin)) throw new RangeError(`vin must be 17 characters A-Z/0-9 without I, O, Q; got "${opts.vin}"`);
  const scenarios = opts.scenarios ?? [];
  const runId = opts.runId ?? randomUUID();
  const seed = opts.seed ?? seedFromString(runId);
  const plan = planDrive(route, { intervalMs: opts.intervalMs, scenarios, seed });
  const model = createObdModel({ seed, scenarios });
  const start = (opts.startTime ?? new Date()).getTime();
  const last = plan.samples.length - 1;
  const frames = plan.samples.map((sample, i): RunFrame => {
    const kind: FrameKind = i === 0 ? 'startup' : i === last ? 'shutdown' : 'telemetry';
    const { values, accel } = model.read(sample);
    const frame: GatewayFrame = {
      id: `${runId}-${i}`, ts: start + sample.t, kind, location: location(sample), accel, pids: encodePids(values),
    };
    if (kind === 'startup') Object.assign(frame, { vin: opts.vin, battery: model.battery });
    return { t: sample.t, distance: sample.distance, speed: sample.speed, frame };
  });
  applyScenarios(frames, plan, scenarios, seed);
  return frames;
}

function location(s: DriveSample): GatewayFrame['location'] {
  const r = (v: number, d: number) => Math.round(v * 10 ** d) / 10 ** d;
  return { lat: r(s.position[1], 6), lon: r(s.position[0], 6), speed: r(s.speed, 1), heading: r(s.heading, 1) };
}

function applyScenarios(frames: RunFrame[], plan: DrivePlan, scenarios: readonly Scenario[], seed: number): void {
  const rng = createRng(seed ^ 0x5ce7a210);
  const D = plan.durationMs;
  const telemetry = frames.filter((f) => f.frame.kind === 'telemetry');
  if (scenarios.includes('dtc')) {
    for (const f of frames.filter((x) => x.t >= WINDOWS.dtcOn * D)) f.frame.dtcs = f.t < WINDOWS.dtcOff * D ? [DTC_CODE] : [];
  }
  const peakG = rng.uniform(4.2, 6);
  if (scenarios.includes('collision') && plan.events.collisionAt !== undefined) markCollision(frames[plan.events.collisionAt], peakG);
  if (scenarios.includes('gps-gap')) {
    for (const f of telemetry) if (f.t >= WINDOWS.gapFrom * D && f.t < WINDOWS.gapTo * D) f.buffered = true;
  }
  if (scenarios.includes('duplicates')) {
    const candidates = telemetry.filter((f) => !f.buffered);
    const count = Math.min(candidates.length, Math.max(2, Math.round(candidates.length * 0.03)));
    for (let n = 0; n < count; n++) candidates.splice(rng.int(candidates.length), 1)[0].duplicate = true;
  }
}

/** A spike of peakG (g) on the frame of the impact (motion.ts places it; the car stands from the next frame on). */
function markCollision(target: RunFrame, peakG: number): void {
  const g = Math.round(peakG * 100) / 100;
  const a = target.frame.accel;
  Object.assign(a, { minX: Math.round(-g * G * 1000) / 1000, maxY: Math.round(0.8 * G * 1000) / 1000, maxZ: Math.round(1.6 * G * 1000) / 1000 });
  target.frame.collision = { peakG: g };
}

/** The frame a device sends when stopped early: last reading, standing, engine off. */
export function shutdownAfter(last: GatewayFrame, id: string, ts: number): GatewayFrame {
  const { vin: _vin, battery: _battery, collision: _collision, ...rest } = last;
  return {
    ...rest, id, ts, kind: 'shutdown',
    location: { ...last.location, speed: 0 },
    pids: { ...last.pids, '0D': '00' },
  };
}
