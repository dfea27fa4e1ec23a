// Small spherical helpers on [lon, lat] pairs. Distances use the same haversine and earth
// radius as @turf/distance, so lengths computed here agree with @turf/length and @turf/along.

export type LonLat = [number, number];

const EARTH_RADIUS_M = 6371008.8;
const RAD = Math.PI / 180;

/** Great-circle distance in meters. */
export function haversineM(a: LonLat, b: LonLat): number {
  const dLat = (b[1] - a[1]) * RAD;
  const dLon = (b[0] - a[0]) * RAD;
  const h = Math.sin(dLat / 2) ** 2 + Math.sin(dLon / 2) ** 2 * Math.cos(a[1] * RAD) * Math.cos(b[1] * RAD);
  return EARTH_RADIUS_M * 2 * Math.atan2(Math.sqrt(h), Math.sqrt(1 - h));
}

/** Initial bearing from a to b, degrees clockwise from north in [0, 360). */
export function bearingDeg(a: LonLat, b: LonLat): number {
  const lat1 = a[1] * RAD;
  const lat2 = b[1] * RAD;
  const dLon = (b[0] - a[0]) * RAD;
  const y = Math.sin(dLon) * Math.cos(lat2);
  const x = Math.cos(lat1) * Math.sin(lat2) - Math.sin(lat1) * Math.cos(lat2) * Math.cos(dLon);
  return (Math.atan2(y, x) / RAD + 360) % 360;
}

/** Smallest signed difference b − a between two bearings, degrees in (−180, 180]. */
export function bearingDelta(a: number, b: number): number {
  const d = (((b - a) % 360) + 540) % 360 - 180;
  return d === -180 ? 180 : d;
}

/** Cumulative distance (m) at each vertex; first is 0, last is the line length. */
export function cumulativeDistances(coords: LonLat[]): number[] {
  const out = [0];
  for (let i = 1; i < coords.length; i++) out.push(out[i - 1] + haversineM(coords[i - 1], coords[i]));
  return out;
}

/** Sum of haversine distances between consecutive points (m). */
export function pathLengthM(coords: LonLat[]): number {
  const cum = cumulativeDistances(coords);
  return cum[cum.length - 1];
}

/** Index i of the segment [i, i+1] holding distance d (binary search on cumulative distances). */
export function segmentIndexAt(cum: number[], d: number): number {
  let lo = 0;
  let hi = cum.length - 2;
  if (hi <= 0) return 0;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (cum[mid] <= d) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** Point at distance d, linear in lon/lat within the segment: precise enough for bearings. */
export function pointAtLinear(coords: LonLat[], cum: number[], d: number): LonLat {
  const total = cum[cum.length - 1];
  const s = Math.min(Math.max(d, 0), total);
  const i = segmentIndexAt(cum, s);
  const len = cum[i + 1] - cum[i];
  const f = len > 0 ? (s - cum[i]) / len : 0;
  const a = coords[i];
  const b = coords[Math.min(i + 1, coords.length - 1)];
  return [a[0] + (b[0] - a[0]) * f, a[1] + (b[1] - a[1]) * f];
}

/** Direction of travel (deg) at distance d: the bearing of the first non-empty segment at or after it. */
export function headingAt(coords: LonLat[], cum: number[], d: number): number {
  let i = segmentIndexAt(cum, d);
  while (i < coords.length - 2 && cum[i + 1] - cum[i] === 0) i++;
  while (i > 0 && cum[i + 1] - cum[i] === 0) i--;
  return bearingDeg(coords[i], coords[i + 1]);
}
