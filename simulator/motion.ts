// The drive plan: a speed profile over the route scaled to the recorded duration, sampled at the
// telemetry interval with positions on the polyline.
import { along } from '@turf/along';
import { cumulativeDistances, headingAt, type LonLat } from './geo.js';
import { decodeRoute, type StoredRoute } from './route.js';
import type { Scenario } from './scenarios.js';
import { createRng, seedFromString } from './prng.js';
import { addStop, buildGrid, cellTime, MOTION, solveScale, speedsFor, totalTime, type Grid } from './speed-profile.js';
import { applyTraffic, TRAFFIC } from './traffic.js';

export type MotionRoute = Pick<StoredRoute, 'polyline' | 'duration'> & Partial<Pick<StoredRoute, 'profile' | 'stops'>>;

export interface PlanOptions {
  /** ms between samples; default DEFAULT_INTERVAL_MS, at most MAX_INTERVAL_MS. */
  intervalMs?: number;
  /** hard-brake and hard-accel add their standstill; collision ends the drive where it happens. */
  scenarios?: readonly Scenario[];
  /** Draws the traffic (speed drift, junction stops); one seed gives one drive. Default: from the polyline. */
  seed?: number;
  /** false: the bare profile, without traffic (turns, stops and limits only). Default true. */
  traffic?: boolean;
}

export interface DriveSample {
  /** ms since the start of the drive. */ t: number;
  /** m along the route. */ distance: number;
  /** km/h. */ speed: number;
  /** m/s², longitudinal, at this instant. */ accel: number;
  /** m/s², extremes since the previous sample (what an accelerometer window would see). */
  accelMin: number;
  accelMax: number;
  /** [lon, lat] on the polyline. */ position: LonLat;
  /** Degrees from north, direction of travel. */ heading: number;
}

export interface DrivePlan {
  samples: DriveSample[];
  intervalMs: number;
  /** m, the polyline's length; the last sample's distance. */ lengthM: number;
  /** ms, the planned drive (last sample's t). */ durationMs: number;
  /** ms, the route's recorded duration. */ targetDurationMs: number;
  /** durationMs / targetDurationMs − 1. */ durationError: number;
  /** False when no speed within the clamp reproduces the recorded duration within 1%. */
  feasible: boolean;
  note?: string;
  /** km/h cruise (no profile) or the factor applied to the profile's speeds. */ scale: number;
  /** km/h. */ maxSpeed: number;
  /** m along the route where a scenario's standstill was placed; the index of the sample of the collision. */
  events: { hardBrakeAtM?: number; hardAccelAtM?: number; collisionAt?: number };
  /** m along the route of the junction stops the traffic added. */
  junctionStopsAtM: number[];
}

export const DEFAULT_INTERVAL_MS = 1000;
export const MAX_INTERVAL_MS = 5000;
const HARD = { brake: 6.0, accel: 4.5, zoneM: 110, lookM: 60, dwellS: 2 };
/** After a collision the car stands where it hit for this long (hazard lights, engine running), then the engine stops. */
export const COLLISION = { fromShare: 0.5, minKmh: 15, standS: 30 };

export function planDrive(route: MotionRoute, opts: PlanOptions = {}): DrivePlan {
  const intervalMs = opts.intervalMs ?? DEFAULT_INTERVAL_MS;
  if (!(intervalMs >= 100 && intervalMs <= MAX_INTERVAL_MS)) {
    throw new RangeError(`intervalMs must be 100..${MAX_INTERVAL_MS}, got ${intervalMs}`);
  }
  const { coordinates, lengthM } = decodeRoute(route);
  const cum = cumulativeDistances(coordinates);
  const seed = opts.seed ?? seedFromString(route.polyline);
  const prepare = (junctionStops: boolean) => {
    const grid = buildGrid({ coordinates, cum, lengthM, profile: route.profile, stops: route.stops });
    const traffic = opts.traffic === false ? { stopsAtM: [], dwellS: 0 } : applyTraffic(grid, createRng(seed), {
      shape: !route.profile?.length,
      dwellBudgetS: junctionStops && !route.stops?.length ? (TRAFFIC.dwellShare * route.duration) / 1000 : 0,
    });
    const events = addScenarioEvents(grid, opts.scenarios ?? []);
    return { grid, traffic, events, solution: solveScale(grid, route.duration / 1000) };
  };
  let prepared = prepare(true);
  // Junction stops never make a drive miss its recorded duration: without them the cruise may reach it.
  if (!prepared.solution.feasible && prepared.traffic.stopsAtM.length) prepared = prepare(false);
  const { grid, traffic, events, solution } = prepared;
  const timeline = buildTimeline(grid, solution.speeds);
  let durationMs = Math.round(timeline.end * 1000);
  let samples: DriveSample[] = [];
  for (let t = 0; t < durationMs; t += intervalMs) samples.push(sampleAt(timeline, t, samples.at(-1)?.t ?? 0, coordinates, cum));
  samples.push(sampleAt(timeline, durationMs, samples.at(-1)?.t ?? 0, coordinates, cum));
  if (opts.scenarios?.includes('collision')) {
    ({ samples, at: events.collisionAt } = stopAtCollision(samples, durationMs, intervalMs));
    durationMs = samples.at(-1)!.t;
  }
  const durationError = durationMs / route.duration - 1;
  return {
    samples, intervalMs, lengthM, durationMs, targetDurationMs: route.duration, durationError,
    feasible: solution.feasible, scale: solution.k, events, junctionStopsAtM: traffic.stopsAtM,
    maxSpeed: solution.speeds.reduce((a, b) => Math.max(a, b), 0) * 3.6,
    note: solution.feasible ? undefined
      : `recorded duration ${route.duration} ms is out of reach within ${MOTION.minKmh}..${MOTION.maxKmh} km/h; planned ${durationMs} ms`,
  };
}

/**
 * The collision: the first sample from COLLISION.fromShare of the drive on at a speed of at least minKmh
 * (else at any motion) is the impact; the car is standing at the next sample, stays there standS seconds,
 * and the drive ends.
 */
function stopAtCollision(samples: DriveSample[], durationMs: number, intervalMs: number): { samples: DriveSample[]; at: number } {
  const from = Math.max(1, samples.findIndex((s) => s.t >= COLLISION.fromShare * durationMs));
  const moving = (kmh: number) => samples.findIndex((s, i) => i >= from && i < samples.length - 1 && s.speed >= kmh);
  let at = moving(COLLISION.minKmh);
  if (at < 0) at = moving(5);
  if (at < 1) return { samples, at: Math.min(from, samples.length - 2) };
  const hit = samples[at];
  const out = samples.slice(0, at + 1);
  const stopRate = -(hit.speed / 3.6) / (intervalMs / 1000);
  for (let t = hit.t + intervalMs, n = 0; t <= hit.t + COLLISION.standS * 1000; t += intervalMs, n++) {
    const accel = n === 0 ? stopRate : 0;
    out.push({ ...hit, t, speed: 0, accel: 0, accelMin: accel, accelMax: 0 });
  }
  return { samples: out, at };
}

function addScenarioEvents(grid: Grid, scenarios: readonly Scenario[]): DrivePlan['events'] {
  const events: DrivePlan['events'] = {};
  const zoneCells = Math.round(HARD.zoneM / grid.ds);
  if (scenarios.includes('hard-accel')) {
    const i = addStop(grid, straightest(grid, 0.2, 0.45, +1) * grid.ds, HARD.dwellS);
    for (let c = i; c < Math.min(grid.cells, i + zoneCells); c++) grid.accelLim[c] = HARD.accel;
    events.hardAccelAtM = i * grid.ds;
  }
  if (scenarios.includes('hard-brake')) {
    const i = addStop(grid, straightest(grid, 0.5, 0.75, -1) * grid.ds, HARD.dwellS);
    for (let c = Math.max(0, i - zoneCells); c < i; c++) grid.brakeLim[c] = HARD.brake;
    events.hardBrakeAtM = i * grid.ds;
  }
  return events;
}

/** Grid point in [from, to]·length whose next (dir +1) or previous (−1) lookM meters are least curved. */
function straightest(grid: Grid, from: number, to: number, dir: 1 | -1): number {
  const look = Math.max(1, Math.round(HARD.lookM / grid.ds));
  const step = Math.max(1, Math.round(5 / grid.ds));
  let best = Math.round(((from + to) / 2) * grid.cells);
  let bestCap = -1;
  for (let i = Math.round(from * grid.cells); i <= Math.round(to * grid.cells); i += step) {
    let cap = Infinity;
    for (let j = 1; j <= look; j++) cap = Math.min(cap, grid.turnCap[Math.min(grid.cells, Math.max(0, i + dir * j))]);
    if (cap > bestCap) { bestCap = cap; best = i; }
  }
  return best;
}

interface Timeline {
  grid: Grid;
  v: Float64Array;
  /** s, arrival at and departure from each point (they differ by the dwell). */
  arrive: Float64Array;
  depart: Float64Array;
  end: number;
}

function buildTimeline(grid: Grid, v: Float64Array): Timeline {
  const arrive = new Float64Array(grid.cells + 1);
  const depart = new Float64Array(grid.cells + 1);
  for (let i = 0; i <= grid.cells; i++) {
    if (i > 0) arrive[i] = depart[i - 1] + cellTime(grid, v, i - 1);
    depart[i] = arrive[i] + grid.dwell[i];
  }
  return { grid, v, arrive, depart, end: depart[grid.cells] };
}

/** Last point whose arrival is at or before t (s). */
function pointAt(tl: Timeline, t: number): number {
  let lo = 0;
  let hi = tl.grid.cells;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (tl.arrive[mid] <= t) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

const cellAccel = (tl: Timeline, i: number) => (tl.v[i + 1] ** 2 - tl.v[i] ** 2) / (2 * tl.grid.ds);

function sampleAt(tl: Timeline, tMs: number, prevMs: number, coords: LonLat[], cum: number[]): DriveSample {
  // The last sample (t rounded to ms) is the arrival itself: full length, standing.
  const t = tMs >= Math.round(tl.end * 1000) ? tl.end : tMs / 1000;
  const i = pointAt(tl, t);
  let distance = i * tl.grid.ds;
  let speed: number;
  let accel = 0;
  if (i < tl.grid.cells && t > tl.depart[i]) {
    const tau = t - tl.depart[i];
    accel = cellAccel(tl, i);
    speed = Math.max(0, tl.v[i] + accel * tau);
    distance = Math.min((i + 1) * tl.grid.ds, distance + tl.v[i] * tau + 0.5 * accel * tau * tau);
  } else {
    speed = tl.v[i];
  }
  const [accelMin, accelMax] = accelRange(tl, pointAt(tl, prevMs / 1000), i, accel);
  const position = along({ type: 'LineString', coordinates: coords }, distance, { units: 'meters' }).geometry.coordinates as LonLat;
  return { t: tMs, distance, speed: speed * 3.6, accel, accelMin, accelMax, position, heading: headingAt(coords, cum, distance) };
}

function accelRange(tl: Timeline, from: number, to: number, now: number): [number, number] {
  let [min, max] = [now, now];
  for (let c = from; c <= Math.min(to, tl.grid.cells - 1); c++) {
    const a = cellAccel(tl, c);
    if (a < min) min = a;
    if (a > max) max = a;
  }
  return [min, max];
}

/** km/h, cruise of the default urban drive used when a route's duration is unknown. */
export const URBAN_CRUISE_KMH = 40;

/** ms to drive the route with the default urban profile (or its own profile as given). */
export function estimateDurationMs(route: Omit<MotionRoute, 'duration'>): number {
  const { coordinates, lengthM } = decodeRoute(route);
  const grid = buildGrid({ coordinates, cum: cumulativeDistances(coordinates), lengthM, profile: route.profile, stops: route.stops });
  return totalTime(grid, speedsFor(grid, route.profile?.length ? 1 : URBAN_CRUISE_KMH)) * 1000;
}
