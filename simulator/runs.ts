// Rules shared by the runs API, the run scheduler and the CLI: what a valid run is, what it will
// send, and when a dummy's next pass may begin (clock.ts).
import { randomBytes } from 'node:crypto';
import { leadWaitMs, passLeadMs, passStartTs } from './clock.js';
import { planDrive, type MotionRoute } from './motion.js';
import { parseScenarios, SCENARIOS, type Scenario } from './scenarios.js';

/** A made-up 17-character VIN starting with VV; the rest as real VINs (no I, O, Q). */
export const DUMMY_VIN = /^VV[A-HJ-NPR-Z0-9]{15}$/;
export const VIN_RULE = 'vin must be 17 characters: "VV" followed by 15 of A-Z (except I, O, Q) and 0-9';
export const MIN_SPEED = 1;
export const MAX_SPEED = 1000;
/** ms between telemetry frames of a run. */
export const RUN_INTERVAL_MS = 1000;

const VIN_ALPHABET = 'ABCDEFGHJKLMNPRSTUVWXYZ0123456789';

export function vinProblem(vin: unknown): string | undefined {
  if (typeof vin === 'string' && DUMMY_VIN.test(vin)) return undefined;
  return `${VIN_RULE}; got ${JSON.stringify(vin)}`;
}

export function speedProblem(speed: unknown): string | undefined {
  if (typeof speed === 'number' && Number.isFinite(speed) && speed >= MIN_SPEED && speed <= MAX_SPEED) return undefined;
  return `speed must be a number from ${MIN_SPEED} (real time) to ${MAX_SPEED}; got ${JSON.stringify(speed)}`;
}

/** The scenarios, or a message naming each unknown one. */
export function scenariosOrProblem(input: readonly string[]): { scenarios: Scenario[] } | { problem: string } {
  try {
    return { scenarios: parseScenarios(input) };
  } catch (err) {
    return { problem: `scenarios: ${(err as Error).message}` };
  }
}

export function randomVin(): string {
  return 'VV' + Array.from(randomBytes(15), (b) => VIN_ALPHABET[b % VIN_ALPHABET.length]).join('');
}

export interface RunEstimate {
  /** Frames the device will send in one pass (as DeviceProgress.framesTotal). */ framesTotal: number;
  /** ms of drive time of one pass (not wall-clock). */ driveMs: number;
}

export function estimateRun(route: MotionRoute, opts: { scenarios?: readonly Scenario[]; intervalMs?: number } = {}): RunEstimate {
  const plan = planDrive(route, { intervalMs: opts.intervalMs ?? RUN_INTERVAL_MS, scenarios: opts.scenarios });
  return { framesTotal: plan.samples.length, driveMs: plan.durationMs };
}

export interface PassWait {
  /** ms to wait before the pass starts (0: at once). */ waitMs: number;
  /** Why, in words; null without a wait. */ reason: string | null;
  /** epoch ms the pass's first frame is stamped with, if it started now (clock.ts passStartTs). */ startTs: number;
}

const duration = (ms: number) => {
  const s = Math.round(ms / 1000);
  if (s < 120) return `${s} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  return `${(s / 3600).toFixed(1)} h`;
};

/**
 * When a dummy's next pass may start. A pass is stamped on the dummy's clock (clock.ts): from now, or just after
 * its last stamp when earlier runs at a speed factor left that ahead of the wall clock; it waits only while its
 * last frame would lead the wall clock by more than the gateway accepts of a dummy (`maxLeadMs`).
 */
export function passWait(lastFrameAt: number | null, driveMs: number, speed: number, maxLeadMs: number, now = Date.now()): PassWait {
  const waitMs = leadWaitMs(lastFrameAt, driveMs, speed, maxLeadMs, now);
  const ahead = (lastFrameAt ?? now) - now;
  const reason = waitMs > 0
    ? `the dummy's clock is ${duration(ahead)} ahead of real time after its earlier runs; this pass would end `
      + `${duration(ahead + passLeadMs(driveMs, speed))} ahead, and the gateway accepts a dummy's frames at most ${duration(maxLeadMs)} ahead `
      + '(--dummy-max-lead-ms)'
    : null;
  return { waitMs, reason, startTs: passStartTs(lastFrameAt, now) };
}

/** Why no wait can make this pass fit: on its own it leads the wall clock by more than `maxLeadMs`; null when it fits. */
export function leadProblem(driveMs: number, speed: number, maxLeadMs: number): string | undefined {
  const lead = passLeadMs(driveMs, speed);
  if (lead <= maxLeadMs) return undefined;
  return `at speed ${speed} this drive of ${duration(driveMs)} would stamp its last frame ${duration(lead)} ahead of real time; `
    + `the gateway accepts a dummy's frames at most ${duration(maxLeadMs)} ahead (--dummy-max-lead-ms): choose a lower speed`;
}

export { SCENARIOS };
