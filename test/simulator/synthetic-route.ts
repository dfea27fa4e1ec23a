// Routes built from legs in meters, for tests that need a known shape.
import type { LonLat } from '../../simulator/geo.js';
import { encodePolyline, type StoredRoute } from '../../simulator/route.js';

const M_PER_DEG_LAT = 111195;

/** Walks from `start` along legs of [east m, north m], one vertex every `stepM` meters. */
export function legsToCoords(legs: [number, number][], start: LonLat = [-96.8, 32.78], stepM = 20): LonLat[] {
  const mPerDegLon = M_PER_DEG_LAT * Math.cos((start[1] * Math.PI) / 180);
  const out: LonLat[] = [start];
  let [x, y] = [0, 0];
  for (const [east, north] of legs) {
    const steps = Math.max(1, Math.round(Math.hypot(east, north) / stepM));
    for (let i = 1; i <= steps; i++) {
      const [px, py] = [x + (east * i) / steps, y + (north * i) / steps];
      out.push([start[0] + px / mPerDegLon, start[1] + py / M_PER_DEG_LAT]);
    }
    [x, y] = [x + east, y + north];
  }
  return out;
}

export function syntheticRoute(legs: [number, number][], durationMs: number, extra: Partial<StoredRoute> = {}): StoredRoute {
  const polyline = encodePolyline(legsToCoords(legs));
  return {
    id: 'synthetic', name: 'Synthetic', description: '', polyline, messageCount: 0, locationCount: 0,
    distanceByGPS: 0, distanceByVSS: 0, duration: durationMs, ...extra,
  };
}
