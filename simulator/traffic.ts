// City traffic laid over a route that carries no speed profile of its own: speeds that follow the
// road (faster on long straight stretches, slower on short ones between turns), a seeded drift of the
// traffic around that, and standstills at junctions (red lights, stop signs, giving way). Every draw
// comes from the run's seed, so one seed gives one drive.
import { createRng, type Rng } from './prng.js';
import { addStop, type Grid } from './speed-profile.js';

export const TRAFFIC = {
  /** Degrees of heading change (over the 30 m turn window) that make a point a junction turn. */ junctionTurnDeg: 50,
  /** Degrees of heading change that end a straight stretch (for the stretch-length speed). */ breakTurnDeg: 30,
  /** m, a junction on a straight is assumed every this many meters (drawn between the two). */ blockM: [180, 360] as const,
  /** Chance of standing at a junction turn, and at a junction passed straight on. */ stopAtTurn: 0.55, stopOnStraight: 0.3,
  /** s standing at a junction (drawn uniformly). */ dwellS: [4, 28] as const,
  /** Share of the route's duration the junction stops may take together. */ dwellShare: 0.12,
  /** m kept clear of junction stops after the start, before the end and around other standstills. */ clearM: 60,
  /** Speed factor of a stretch: short stretches at `short`, stretches of `longM` or more at `long`. */
  short: 0.8, long: 1.2, shortM: 80, longM: 600,
  /** Traffic drift: the sum of a few waves over distance, of these wavelengths (m), at most ± `drift`. */
  waveM: [140, 700] as const, drift: 0.16,
};

export interface TrafficResult {
  /** m along the route of each junction stop added. */ stopsAtM: number[];
  /** s standing at them in all. */ dwellS: number;
}

/**
 * With `shape`, scales `grid.base` (the factor on the cruise) by stretch length and traffic drift; then adds
 * junction stops standing `dwellBudgetS` seconds at most in all (0: none).
 */
export function applyTraffic(grid: Grid, rng: Rng, opts: { shape: boolean; dwellBudgetS: number }): TrafficResult {
  // Drawn whether used or not, so that the stops of a seed do not depend on the shaping.
  const drift = rng.next() * 0x7fffffff;
  if (opts.shape) {
    shapeByStretch(grid, grid.turnDeg);
    addDrift(grid, createRng(drift));
  }
  return addJunctionStops(grid, grid.turnDeg, rng, opts.dwellBudgetS);
}

function shapeByStretch(grid: Grid, turnDeg: Float64Array): void {
  const breaks = [0];
  for (const i of localPeaks(turnDeg, TRAFFIC.breakTurnDeg, grid)) breaks.push(i);
  breaks.push(grid.cells);
  for (let b = 1; b < breaks.length; b++) {
    const [from, to] = [breaks[b - 1], breaks[b]];
    const lengthM = (to - from) * grid.ds;
    const f = Math.min(1, Math.max(0, (lengthM - TRAFFIC.shortM) / (TRAFFIC.longM - TRAFFIC.shortM)));
    const factor = TRAFFIC.short + (TRAFFIC.long - TRAFFIC.short) * f;
    for (let i = from; i <= to; i++) grid.base[i] *= factor;
  }
}

function addDrift(grid: Grid, rng: Rng): void {
  const waves = [0, 1, 2].map(() => ({
    length: rng.uniform(TRAFFIC.waveM[0], TRAFFIC.waveM[1]), phase: rng.uniform(0, 2 * Math.PI), weight: rng.uniform(0.5, 1),
  }));
  const total = waves.reduce((a, w) => a + w.weight, 0);
  for (let i = 0; i <= grid.cells; i++) {
    const s = i * grid.ds;
    const wave = waves.reduce((a, w) => a + w.weight * Math.sin((2 * Math.PI * s) / w.length + w.phase), 0) / total;
    grid.base[i] *= 1 + TRAFFIC.drift * wave;
  }
}

function addJunctionStops(grid: Grid, turnDeg: Float64Array, rng: Rng, budgetS: number): TrafficResult {
  const clear = Math.round(TRAFFIC.clearM / grid.ds);
  const turns = localPeaks(turnDeg, TRAFFIC.junctionTurnDeg, grid);
  // Junctions on the straights: one every block length, drawn afresh for each block.
  const candidates: { i: number; p: number }[] = turns.map((i) => ({ i, p: TRAFFIC.stopAtTurn }));
  for (let s = rng.uniform(TRAFFIC.blockM[0], TRAFFIC.blockM[1]); s < grid.cells * grid.ds; s += rng.uniform(TRAFFIC.blockM[0], TRAFFIC.blockM[1])) {
    const i = Math.round(s / grid.ds);
    if (!turns.some((t) => Math.abs(t - i) < clear)) candidates.push({ i, p: TRAFFIC.stopOnStraight });
  }
  candidates.sort((a, b) => a.i - b.i);
  const out: TrafficResult = { stopsAtM: [], dwellS: 0 };
  for (const { i, p } of candidates) {
    const stop = rng.next() < p;
    const seconds = Math.round(rng.uniform(TRAFFIC.dwellS[0], TRAFFIC.dwellS[1]));
    if (!stop || i < clear || i > grid.cells - clear || out.dwellS + seconds > budgetS) continue;
    if (nearZero(grid, i, clear)) continue;
    addStop(grid, i * grid.ds, seconds);
    out.stopsAtM.push(i * grid.ds);
    out.dwellS += seconds;
  }
  return out;
}

function nearZero(grid: Grid, i: number, clear: number): boolean {
  for (let j = Math.max(0, i - clear); j <= Math.min(grid.cells, i + clear); j++) if (grid.zero[j]) return true;
  return false;
}

/** Points where the turn is at least `minDeg` and the largest within the clearance window. */
function localPeaks(turnDeg: Float64Array, minDeg: number, grid: Grid): number[] {
  const window = Math.max(1, Math.round(TRAFFIC.clearM / 2 / grid.ds));
  const out: number[] = [];
  for (let i = 0; i <= grid.cells; i++) {
    if (turnDeg[i] < minDeg) continue;
    let peak = true;
    for (let j = Math.max(0, i - window); j <= Math.min(grid.cells, i + window) && peak; j++) {
      if (turnDeg[j] > turnDeg[i] || (turnDeg[j] === turnDeg[i] && j < i)) peak = false;
    }
    if (peak) out.push(i);
  }
  return out;
}
