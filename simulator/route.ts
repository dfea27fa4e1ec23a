// Stored routes (routes-data/*.json, format in routes-data/README.md): loading, decoding and the
// validation rules shared with route import.
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import polyline from '@mapbox/polyline';
import { lineString } from '@turf/helpers';
import { length as turfLength } from '@turf/length';
import type { LineString } from 'geojson';
import type { LonLat } from './geo.js';

/** A target speed (km/h) from `at` meters along the route; linear between points. */
export interface SpeedPoint { at: number; speed: number }
/** A standstill of `seconds` at `at` meters along the route (traffic light, stop sign). */
export interface RouteStop { at: number; seconds: number }

export interface StoredRoute {
  id: string;
  name: string;
  description: string;
  /** Google encoded polyline, precision 5. */
  polyline: string;
  messageCount: number;
  locationCount: number;
  /** Meters. */
  distanceByGPS: number;
  /** Meters. */
  distanceByVSS: number;
  /** Milliseconds. */
  duration: number;
  profile?: SpeedPoint[];
  stops?: RouteStop[];
}

export interface DecodedRoute {
  line: LineString;
  coordinates: LonLat[];
  /** Length of the decoded polyline in meters (WGS84 haversine, as @turf/length). */
  lengthM: number;
}

export const DEFAULT_ROUTES_DIR = fileURLToPath(new URL('../routes-data/', import.meta.url));

export class RouteDataError extends Error {
  override name = 'RouteDataError';
}

export const POLYLINE_PRECISION = 5;

export function decodePolyline(encoded: string): LonLat[] {
  return polyline.decode(encoded, POLYLINE_PRECISION).map(([lat, lon]) => [lon, lat] as LonLat);
}

export function encodePolyline(coords: LonLat[]): string {
  return polyline.encode(coords.map(([lon, lat]) => [lat, lon] as [number, number]), POLYLINE_PRECISION);
}

export function lineLengthM(coords: LonLat[]): number {
  return turfLength(lineString(coords), { units: 'meters' });
}

export function decodeRoute(route: Pick<StoredRoute, 'polyline'>): DecodedRoute {
  const coordinates = decodePolyline(route.polyline);
  const problem = pointCountProblem(coordinates);
  if (problem) throw new RouteDataError(problem);
  return { line: { type: 'LineString', coordinates }, coordinates, lengthM: lineLengthM(coordinates) };
}

// ---- validation shared with route-import.ts: each returns a message or undefined ----

/** Checks one [lon, lat(, ele)] position; `path` names it in the message, e.g. "coordinates[3]". */
export function coordinateProblem(value: unknown, path: string): string | undefined {
  if (!Array.isArray(value) || value.length < 2) return `${path} is not a [longitude, latitude] pair`;
  return numberProblem(value[0], `${path}[0] longitude`, 180) ?? numberProblem(value[1], `${path}[1] latitude`, 90);
}

/** A finite number within ±limit, or a message naming `what`. */
export function numberProblem(value: unknown, what: string, limit: number): string | undefined {
  if (typeof value !== 'number' || !Number.isFinite(value)) return `${what} ${JSON.stringify(value)} is not a number`;
  if (Math.abs(value) > limit) return `${what} ${value} is out of range -${limit}..${limit}`;
  return undefined;
}

export function pointCountProblem(coords: LonLat[]): string | undefined {
  if (coords.length < 2) return `a route needs at least 2 points, got ${coords.length}`;
  if (lineLengthM(coords) < 1) return 'the route has zero length (all points are the same)';
  return undefined;
}

const isNum = (v: unknown, min = 0): v is number => typeof v === 'number' && Number.isFinite(v) && v >= min;

/** Every problem with a stored route record (empty when valid). */
export function storedRouteProblems(r: Record<string, unknown>): string[] {
  const out: string[] = [];
  for (const key of ['id', 'name', 'polyline'] as const) {
    if (typeof r[key] !== 'string' || r[key] === '') out.push(`${key} must be a non-empty string`);
  }
  if (typeof r.description !== 'string') out.push('description must be a string');
  for (const key of ['messageCount', 'locationCount', 'distanceByGPS', 'distanceByVSS'] as const) {
    if (!isNum(r[key])) out.push(`${key} must be a number >= 0`);
  }
  if (!isNum(r.duration, 1)) out.push('duration must be a number of milliseconds > 0');
  if (typeof r.polyline === 'string' && r.polyline) {
    const p = pointCountProblem(decodePolyline(r.polyline));
    if (p) out.push(`polyline: ${p}`);
  }
  out.push(...listProblems(r.profile, 'profile', 'speed'), ...listProblems(r.stops, 'stops', 'seconds'));
  return out;
}

function listProblems(list: unknown, name: string, valueKey: 'speed' | 'seconds'): string[] {
  if (list === undefined) return [];
  if (!Array.isArray(list)) return [`${name} must be a list`];
  const out: string[] = [];
  list.forEach((p: Record<string, unknown>, i) => {
    if (!isNum(p?.at)) out.push(`${name}[${i}].at must be meters >= 0`);
    if (!isNum(p?.[valueKey])) out.push(`${name}[${i}].${valueKey} must be a number >= 0`);
    if (i > 0 && isNum(p?.at) && p.at < (list[i - 1]?.at ?? 0)) out.push(`${name}[${i}].at is before ${name}[${i - 1}].at`);
  });
  return out;
}

// ---- files ----

export async function loadStoredRoutes(dir: string = DEFAULT_ROUTES_DIR): Promise<StoredRoute[]> {
  const files = (await readdir(dir)).filter((f) => f.endsWith('.json')).sort();
  const routes: StoredRoute[] = [];
  for (const file of files) {
    let data: unknown;
    try {
      data = JSON.parse(await readFile(join(dir, file), 'utf8'));
    } catch (err) {
      throw new RouteDataError(`${file}: not valid JSON (${(err as Error).message})`);
    }
    const problems = typeof data === 'object' && data ? storedRouteProblems(data as Record<string, unknown>) : ['not an object'];
    if (problems.length) throw new RouteDataError(`${file}: ${problems.join('; ')}`);
    routes.push(data as StoredRoute);
  }
  return routes.sort((a, b) => a.name.localeCompare(b.name));
}

/** File name for a route: its name in kebab-case, e.g. "DFW - Back Home" → "dfw-back-home.json". */
export function routeFileName(route: Pick<StoredRoute, 'name'>): string {
  const slug = route.name.toLowerCase().normalize('NFKD').replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '');
  return `${slug || 'route'}.json`;
}

/** The file text: stable key order, one profile point or stop per line. */
export function serializeRoute(route: StoredRoute): string {
  const { id, name, description, polyline: line, messageCount, locationCount, distanceByGPS, distanceByVSS, duration } = route;
  const head = JSON.stringify({ id, name, description, polyline: line, messageCount, locationCount, distanceByGPS, distanceByVSS, duration }, null, 2);
  const lists = (['profile', 'stops'] as const)
    .filter((key) => route[key]?.length)
    .map((key) => `  "${key}": [\n${route[key]!.map((p) => `    ${JSON.stringify(p)}`).join(',\n')}\n  ]`);
  return lists.length ? `${head.slice(0, -2)},\n${lists.join(',\n')}\n}\n` : `${head}\n`;
}

/** Writes the route as <dir>/<slug>.json; returns the path. */
export async function writeStoredRoute(route: StoredRoute, dir: string = DEFAULT_ROUTES_DIR): Promise<string> {
  const path = join(dir, routeFileName(route));
  await writeFile(path, serializeRoute(route));
  return path;
}
