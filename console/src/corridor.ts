/**
 * A corridor's outline on the map: the edge of everything within `d` meters of a line, the region the API's
 * ST_DWithin test calls inside. Computed in a local plane (meters east and north of the line's mean latitude,
 * conformal there, so a circle of d meters stays a circle): the line is walked out and back, offset d to its
 * left with round outer joins (which makes the round end caps too), and the parts of that curve closer than d to
 * some part of the line (inner corners, places where the line passes near itself) are cut out.
 */
type XY = [number, number];

/** Mean Earth radius (m), as Leaflet's map.distance uses. */
const EARTH = 6371000;
const RAD = Math.PI / 180;
/** Arc steps at round joins and caps (radians). */
const ARC_STEP = 10 * RAD;

/** [lon, lat] positions → pieces of the outline at distance d (m), each a run of [lat, lon] points. */
export function corridorOutline(coordinates: number[][], d: number): [number, number][][] {
  if (!(d > 0) || !coordinates.length) return [];
  const lat0 = coordinates.reduce((s, c) => s + c[1], 0) / coordinates.length;
  const lon0 = coordinates[0][0];
  const kx = EARTH * Math.cos(lat0 * RAD) * RAD;
  const ky = EARTH * RAD;
  const toXY = (c: number[]): XY => [(c[0] - lon0) * kx, (c[1] - lat0) * ky];
  const toLatLon = ([x, y]: XY): [number, number] => [round(y / ky + lat0), round(x / kx + lon0)];
  // Simplified to a fiftieth of d: the outline moves by at most that, and a dense GPS line gets far fewer joins.
  const line = simplify(dedupe(coordinates.map(toXY)), d / 50);
  const near = new SegmentIndex(line, d);
  const curve = offsetCurve(line, d);
  return trim(curve, d, near).map((piece) => piece.map(toLatLon));
}

/** The line walked there and back (the turn at each end a half circle), offset d to its left: a closed curve. */
function offsetCurve(line: XY[], d: number): XY[] {
  if (line.length === 1) return arc(line[0], 0, -2 * Math.PI, d).slice(0, -1);
  const path = [...line, ...line.slice(1, -1).reverse()]; // closed: the last point leads back to the first
  const m = path.length;
  const out: XY[] = [];
  for (let k = 0; k < m; k++) {
    const [a, b, c] = [path[k], path[(k + 1) % m], path[(k + 2) % m]];
    const [n1, n2] = [leftNormal(a, b), leftNormal(b, c)];
    out.push([a[0] + d * n1[0], a[1] + d * n1[1]], [b[0] + d * n1[0], b[1] + d * n1[1]]);
    // The turn at b, (-π, π]: negative turns right, where the left side is the outer one and gets a round join;
    // π is the turn back at an end of the line, a half circle round it. A left turn's offsets cross: trimmed later.
    let turn = Math.atan2(n2[1], n2[0]) - Math.atan2(n1[1], n1[0]);
    while (turn > Math.PI) turn -= 2 * Math.PI;
    while (turn <= -Math.PI) turn += 2 * Math.PI;
    const sweep = turn >= Math.PI - 1e-9 ? -Math.PI : turn < -1e-9 ? turn : 0;
    if (sweep) out.push(...arc(b, Math.atan2(n1[1], n1[0]), sweep, d).slice(1));
  }
  return out;
}

/** Points on the circle of radius d around c, from angle `from` over `sweep` (negative: clockwise). */
function arc(c: XY, from: number, sweep: number, d: number): XY[] {
  const steps = Math.max(1, Math.ceil(Math.abs(sweep) / ARC_STEP));
  return Array.from({ length: steps + 1 }, (_, i) => {
    const t = from + (sweep * i) / steps;
    return [c[0] + d * Math.cos(t), c[1] + d * Math.sin(t)] as XY;
  });
}

/**
 * The closed curve, sampled at most d/2 apart, less the samples nearer than d to the line; where a run of kept
 * samples ends, the cut point is found by bisection, so pieces end on the outline and not a sample short of it.
 */
function trim(curve: XY[], d: number, near: SegmentIndex): XY[][] {
  const limit = d * (1 - 1e-6);
  const step = Math.max(d / 2, near.length / 20000);
  const samples: XY[] = [];
  for (let i = 0; i < curve.length; i++) {
    const [a, b] = [curve[i], curve[(i + 1) % curve.length]];
    const parts = Math.max(1, Math.ceil(Math.hypot(b[0] - a[0], b[1] - a[1]) / step));
    for (let j = 0; j < parts; j++) samples.push(lerp(a, b, j / parts));
  }
  const kept = samples.map((p) => near.distance(p) >= limit);
  const firstCut = kept.indexOf(false);
  if (firstCut < 0) return [[...samples, samples[0]]];
  const pieces: XY[][] = [];
  let piece: XY[] | null = null;
  for (let s = 1; s <= samples.length; s++) {
    const i = (firstCut + s) % samples.length;
    const prev = (i - 1 + samples.length) % samples.length;
    if (kept[i] && !piece) piece = [edgePoint(samples[prev], samples[i], limit, near)];
    if (kept[i]) piece!.push(samples[i]);
    if (!kept[i] && piece) {
      piece.push(edgePoint(samples[i], samples[prev], limit, near));
      pieces.push(piece);
      piece = null;
    }
  }
  return join(pieces, d / 1000);
}

/**
 * Pieces that meet end to start made one (the cut at an inside corner ends where the next piece starts: both are
 * where the two offsets cross), so a dashed outline runs on round the corner.
 */
function join(pieces: XY[][], tolerance: number): XY[][] {
  const meets = (a: XY[], b: XY[]) => Math.hypot(a[a.length - 1][0] - b[0][0], a[a.length - 1][1] - b[0][1]) <= tolerance;
  const out: XY[][] = [];
  for (const piece of pieces) {
    const last = out[out.length - 1];
    if (last && meets(last, piece)) last.push(...piece.slice(1));
    else out.push(piece);
  }
  if (out.length > 1 && meets(out[out.length - 1], out[0])) out[0] = [...out.pop()!, ...out[0].slice(1)];
  return out;
}

/** Between an inside point and an outside one, the point at distance `limit` from the line. */
function edgePoint(inside: XY, outside: XY, limit: number, near: SegmentIndex): XY {
  let [lo, hi] = [0, 1];
  for (let i = 0; i < 30; i++) {
    const mid = (lo + hi) / 2;
    if (near.distance(lerp(inside, outside, mid)) >= limit) hi = mid;
    else lo = mid;
  }
  return lerp(inside, outside, hi);
}

/** The line's segments in a grid of d-sized cells, so a distance test looks only at the segments near a point. */
class SegmentIndex {
  private readonly cells = new Map<string, number[]>();
  readonly length: number;

  constructor(private readonly line: XY[], private readonly d: number) {
    let length = 0;
    for (let i = 0; i < Math.max(1, line.length - 1); i++) {
      const [a, b] = [line[i], line[Math.min(i + 1, line.length - 1)]];
      const len = Math.hypot(b[0] - a[0], b[1] - a[1]);
      length += len;
      const steps = Math.max(1, Math.ceil(len / (d / 4)));
      const seen = new Set<string>();
      for (let j = 0; j <= steps; j++) {
        const key = this.key(lerp(a, b, j / steps));
        if (seen.has(key)) continue;
        seen.add(key);
        const list = this.cells.get(key);
        if (list) list.push(i); else this.cells.set(key, [i]);
      }
    }
    this.length = length;
  }

  private key([x, y]: XY, dx = 0, dy = 0): string {
    return `${Math.floor(x / this.d) + dx},${Math.floor(y / this.d) + dy}`;
  }

  /**
   * Distance to the line if under d, else d or more (Infinity when no segment is near). A segment within d of p has a
   * point within d/4 of one of its indexed samples, so within 1.25 cells: the 5 × 5 cells around p cover it.
   */
  distance(p: XY): number {
    let best = Infinity;
    for (let dx = -2; dx <= 2; dx++) for (let dy = -2; dy <= 2; dy++) {
      for (const i of this.cells.get(this.key(p, dx, dy)) ?? []) {
        best = Math.min(best, segmentDistance(p, this.line[i], this.line[Math.min(i + 1, this.line.length - 1)]));
      }
    }
    return best;
  }
}

function segmentDistance(p: XY, a: XY, b: XY): number {
  const [abx, aby] = sub(b, a);
  const len2 = abx * abx + aby * aby;
  const t = len2 ? Math.max(0, Math.min(1, ((p[0] - a[0]) * abx + (p[1] - a[1]) * aby) / len2)) : 0;
  return Math.hypot(p[0] - a[0] - t * abx, p[1] - a[1] - t * aby);
}

/** Douglas–Peucker with an explicit stack (a 10 000-point line would overflow a recursive one). */
function simplify(pts: XY[], tolerance: number): XY[] {
  if (pts.length < 3) return pts;
  const keep = new Uint8Array(pts.length);
  keep[0] = keep[pts.length - 1] = 1;
  const stack: [number, number][] = [[0, pts.length - 1]];
  while (stack.length) {
    const [first, last] = stack.pop()!;
    let [index, worst] = [-1, tolerance];
    for (let i = first + 1; i < last; i++) {
      const dist = segmentDistance(pts[i], pts[first], pts[last]);
      if (dist > worst) [index, worst] = [i, dist];
    }
    if (index < 0) continue;
    keep[index] = 1;
    stack.push([first, index], [index, last]);
  }
  return pts.filter((_, i) => keep[i]);
}

function dedupe(pts: XY[]): XY[] {
  return pts.filter((p, i) => i === 0 || p[0] !== pts[i - 1][0] || p[1] !== pts[i - 1][1]);
}

const sub = (a: XY, b: XY): XY => [a[0] - b[0], a[1] - b[1]];
const lerp = (a: XY, b: XY, t: number): XY => [a[0] + (b[0] - a[0]) * t, a[1] + (b[1] - a[1]) * t];
function leftNormal(a: XY, b: XY): XY {
  const len = Math.hypot(b[0] - a[0], b[1] - a[1]) || 1;
  return [-(b[1] - a[1]) / len, (b[0] - a[0]) / len];
}
const round = (x: number) => Math.round(x * 1e7) / 1e7;
