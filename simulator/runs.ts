// Rules shared by the runs API, the run scheduler and the CLI: what a valid run is, what it will
// send, and when a dummy's next pass may begin.
import { randomBytes } from 'node:crypto';
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

/**
 * ms to wait before a pass may start. With speed N a pass stamps its first frame
 * `driveMs·(1 − 1/N)` before the moment it starts (clock.ts); so that a dummy's passes never
 * overlap in time, it starts no earlier than that much after the dummy's last frame stamp.
 */
export function passDelayMs(lastFrameAt: number | null, driveMs: number, speed: number, now = Date.now()): number {
  if (lastFrameAt === null) return 0;
  return Math.max(0, lastFrameAt + driveMs * (1 - 1 / speed) - now);
}

export { SCENARIOS };
