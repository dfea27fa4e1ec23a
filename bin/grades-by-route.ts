// The report-card table of docs/concepts/trips-and-report-cards.md: for each stored route (routes-data/), the grade a
// trip of its length gets with no, one and two hard events, from the formula the trips stage grades with
// (db/trips/segment.ts reportCardOf). Written by `npm run docs` (bin/reference-docs.ts) between its markers.
import fs from 'node:fs';
import path from 'node:path';
import { DEFAULT_ROUTES_DIR, type StoredRoute } from '../simulator/route.js';
import { reportCardOf } from '../db/trips/segment.js';
import type { TripSums } from '../db/trips/formulas.js';

/** The columns: the hard events of the trip. */
export const GRADE_COLUMNS: readonly { label: string; hardBrake: number; hardAccel: number }[] = [
  { label: 'no hard event', hardBrake: 0, hardAccel: 0 },
  { label: '1 hard acceleration', hardBrake: 0, hardAccel: 1 },
  { label: '1 hard brake', hardBrake: 1, hardAccel: 0 },
  { label: '2 hard accelerations', hardBrake: 0, hardAccel: 2 },
  { label: '2 hard brakes', hardBrake: 2, hardAccel: 0 },
];

/** The stored routes, by name. */
function storedRoutes(dir = DEFAULT_ROUTES_DIR): StoredRoute[] {
  return fs.readdirSync(dir).filter((f) => f.endsWith('.json')).sort()
    .map((f) => JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8')) as StoredRoute)
    .sort((a, b) => a.name.localeCompare(b.name));
}

/**
 * A completed trip of the route as the simulator drives it: its recorded GPS distance, duration and messages, every
 * message with a location and a speed, no speeding, and the given hard events.
 */
export function routeTrip(r: Pick<StoredRoute, 'distanceByGPS' | 'duration' | 'messageCount'>, hardBrake: number, hardAccel: number): TripSums {
  return {
    startMs: 0, endMs: r.duration, messageCount: r.messageCount, locationCount: r.messageCount, gpsM: r.distanceByGPS,
    vssM: r.distanceByGPS, speedN: r.messageCount, maxSpeed: null, movingN: 0, movingSum: 0, movingSumSq: 0, loadN: 0, loadSum: 0,
    fuelRateL: 0, airG: 0, fuelN: 0, diesel: false, hardAccel, hardBrake, stopCount: 0, lastStopped: true, speedingMs: 0,
  };
}

const cellOf = (c: { grade: string; score: number | null }) => (c.score === null ? c.grade : `${c.grade} (${c.score.toFixed(2)})`);

/** Longer drives than the stored routes, for comparison: a sample every 5 s at 50 km/h. */
const LONGER = [25_000, 100_000].map((m) => ({
  name: `*a ${m / 1000} km drive*`, distanceByGPS: m, duration: (m / 1000 / 50) * 3_600_000, messageCount: (m / 1000 / 50) * 720,
}));

/** The Markdown table: a row per stored route (then two longer drives), its length and the grade (and score) per column. */
export function gradesByRoute(dir = DEFAULT_ROUTES_DIR): string {
  const rows = [...storedRoutes(dir), ...LONGER].map((r) => `| ${r.name} | ${(r.distanceByGPS / 1000).toFixed(2)} | `
    + `${GRADE_COLUMNS.map((c) => cellOf(reportCardOf(routeTrip(r, c.hardBrake, c.hardAccel)))).join(' | ')} |`);
  return [
    `| route | km | ${GRADE_COLUMNS.map((c) => c.label).join(' | ')} |`,
    `|---|--:|${GRADE_COLUMNS.map(() => '---').join('|')}|`,
    ...rows,
  ].join('\n');
}
