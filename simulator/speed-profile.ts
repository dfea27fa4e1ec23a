// Speed over distance on a fine grid: caps (cruise × profile, turns, stops), then an acceleration
// pass forwards and a braking pass backwards. Times follow from constant acceleration per cell.
import { bearingDeg, bearingDelta, haversineM, pointAtLinear, type LonLat } from './geo.js';
import type { RouteStop, SpeedPoint } from './route.js';

export const MOTION = {
  /** m/s², normal pull-away. */ accel: 2.0,
  /** m/s², normal braking. */ brake: 2.5,
  /** m/s², lateral acceleration accepted in turns: v = sqrt(aLat · R). */ lateral: 2.0,
  /** km/h, no turn is taken slower than this (except at stops). */ minTurnKmh: 15,
  /** km/h, clamp of the target speed. */ minKmh: 5,
  maxKmh: 130,
  /** m, bearing change is measured over this window around each point. */ turnWindowM: 30,
  /** Grid cells at most; cells are ≥ 1 m. */ maxCells: 20000,
};

export interface GridInput {
  coordinates: LonLat[];
  cum: number[];
  lengthM: number;
  profile?: SpeedPoint[];
  stops?: RouteStop[];
}

export interface Grid {
  /** m per cell; point i is at i·ds. */
  ds: number;
  cells: number;
  /** m/s cap from curvature, per point. */
  turnCap: Float64Array;
  /** Degrees of heading change over the turn window, per point. */
  turnDeg: Float64Array;
  /** km/h (with a profile) or 1 (without), per point; the cap is clamp(k · base). */
  base: Float64Array;
  /** Forced standstill at a point. */
  zero: Uint8Array;
  /** s spent standing at a point. */
  dwell: Float64Array;
  /** m/s² limits per cell. */
  accelLim: Float64Array;
  brakeLim: Float64Array;
}

export function buildGrid(input: GridInput): Grid {
  const cells = Math.max(2, Math.min(MOTION.maxCells, Math.ceil(input.lengthM)));
  const ds = input.lengthM / cells;
  const turns = turnCaps(input, cells, ds);
  const grid: Grid = {
    ds, cells,
    turnCap: turns.caps,
    turnDeg: turns.degrees,
    base: baseSpeeds(input.profile, cells, ds),
    zero: new Uint8Array(cells + 1),
    dwell: new Float64Array(cells + 1),
    accelLim: new Float64Array(cells).fill(MOTION.accel),
    brakeLim: new Float64Array(cells).fill(MOTION.brake),
  };
  grid.zero[0] = 1;
  grid.zero[cells] = 1;
  for (const stop of input.stops ?? []) addStop(grid, stop.at, stop.seconds);
  return grid;
}

/** A standstill at `atM` for `seconds`; stops within one cell of another zero point merge into it. */
export function addStop(grid: Grid, atM: number, seconds: number): number {
  let i = Math.min(grid.cells, Math.max(0, Math.round(atM / grid.ds)));
  if (!grid.zero[i]) {
    if (grid.zero[i - 1]) i -= 1;
    else if (grid.zero[i + 1]) i += 1;
  }
  grid.zero[i] = 1;
  grid.dwell[i] += seconds;
  return i;
}

function turnCaps(input: GridInput, cells: number, ds: number): { caps: Float64Array; degrees: Float64Array } {
  const caps = new Float64Array(cells + 1);
  const degrees = new Float64Array(cells + 1);
  const half = MOTION.turnWindowM / 2;
  const at = (d: number) => pointAtLinear(input.coordinates, input.cum, d);
  for (let i = 0; i <= cells; i++) {
    const s = i * ds;
    const [a, p, b] = [at(s - half), at(s), at(s + half)];
    let turnRad = 0;
    if (haversineM(a, p) > 1 && haversineM(p, b) > 1) {
      degrees[i] = Math.abs(bearingDelta(bearingDeg(a, p), bearingDeg(p, b)));
      turnRad = degrees[i] * (Math.PI / 180);
    }
    // Mean radius of the window's arc; a straight gives an infinite cap.
    const radius = turnRad > 0 ? MOTION.turnWindowM / turnRad : Infinity;
    caps[i] = Math.max(Math.sqrt(MOTION.lateral * radius), MOTION.minTurnKmh / 3.6);
  }
  return { caps, degrees };
}

function baseSpeeds(profile: SpeedPoint[] | undefined, cells: number, ds: number): Float64Array {
  const base = new Float64Array(cells + 1).fill(1);
  if (!profile?.length) return base;
  for (let i = 0; i <= cells; i++) base[i] = Math.max(1, interpolate(profile, i * ds));
  return base;
}

function interpolate(points: SpeedPoint[], s: number): number {
  if (s <= points[0].at) return points[0].speed;
  for (let j = 1; j < points.length; j++) {
    const [p, q] = [points[j - 1], points[j]];
    if (s <= q.at) return q.at === p.at ? q.speed : p.speed + ((q.speed - p.speed) * (s - p.at)) / (q.at - p.at);
  }
  return points[points.length - 1].speed;
}

/** Speeds (m/s) at each point for scale k: caps, then acceleration and braking limits. */
export function speedsFor(grid: Grid, k: number): Float64Array {
  const { cells, ds } = grid;
  const v = new Float64Array(cells + 1);
  for (let i = 0; i <= cells; i++) {
    const kmh = Math.min(MOTION.maxKmh, Math.max(MOTION.minKmh, k * grid.base[i]));
    v[i] = grid.zero[i] ? 0 : Math.min(kmh / 3.6, grid.turnCap[i]);
  }
  for (let i = 0; i < cells; i++) v[i + 1] = Math.min(v[i + 1], Math.sqrt(v[i] ** 2 + 2 * grid.accelLim[i] * ds));
  for (let i = cells; i > 0; i--) v[i - 1] = Math.min(v[i - 1], Math.sqrt(v[i] ** 2 + 2 * grid.brakeLim[i - 1] * ds));
  return v;
}

/** Seconds to cross cell i (constant acceleration between its end speeds). */
export function cellTime(grid: Grid, v: Float64Array, i: number): number {
  const sum = v[i] + v[i + 1];
  // Two standstills one cell apart: accelerate half the cell, brake the other half.
  return sum > 0 ? (2 * grid.ds) / sum : 2 * Math.sqrt(grid.ds / MOTION.accel);
}

/** Total drive time in seconds, standstills included. */
export function totalTime(grid: Grid, v: Float64Array): number {
  let t = grid.dwell[grid.cells];
  for (let i = 0; i < grid.cells; i++) t += grid.dwell[i] + cellTime(grid, v, i);
  return t;
}

export interface Solution {
  k: number;
  speeds: Float64Array;
  seconds: number;
  /** False when even the speed clamp cannot reach the target time. */
  feasible: boolean;
}

/** Finds the scale k (cruise km/h, or profile factor) whose drive lasts `targetS`, by bisection on log k. */
export function solveScale(grid: Grid, targetS: number): Solution {
  let maxBase = 1;
  let minBase = Infinity;
  for (const b of grid.base) { maxBase = Math.max(maxBase, b); minBase = Math.min(minBase, b); }
  let lo = Math.log(MOTION.minKmh / maxBase);
  let hi = Math.log(MOTION.maxKmh / minBase);
  const at = (logK: number): Solution => {
    const speeds = speedsFor(grid, Math.exp(logK));
    return { k: Math.exp(logK), speeds, seconds: totalTime(grid, speeds), feasible: true };
  };
  const slowest = at(lo);
  if (slowest.seconds < targetS) return { ...slowest, feasible: false };
  const fastest = at(hi);
  if (fastest.seconds > targetS) return { ...fastest, feasible: false };
  let best = fastest;
  for (let n = 0; n < 60 && Math.abs(best.seconds / targetS - 1) > 1e-4; n++) {
    const mid = (lo + hi) / 2;
    best = at(mid);
    if (best.seconds > targetS) lo = mid;
    else hi = mid;
  }
  // Time can stop falling with k (every cell held by turns or acceleration): report, keep closest.
  return { ...best, feasible: Math.abs(best.seconds / targetS - 1) <= 0.01 };
}
