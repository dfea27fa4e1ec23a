// Turns a user's route file (GeoJSON, GPX or an encoded polyline) into a stored route record.
// Every refusal says where and why, e.g. "line 14: trkpt lat=\"abc\" is not a number".
import { randomUUID } from 'node:crypto';
import { ValidationError } from '../lib/errors.js';
import type { LonLat } from './geo.js';
import { jsonErrorOffset } from './json-error.js';
import { estimateDurationMs } from './motion.js';
import { ImportProblem, parseGpx, type ParsedRoute } from './route-import-gpx.js';
import {
  coordinateProblem, decodePolyline, encodePolyline, lineLengthM, pointCountProblem,
  type RouteStop, type SpeedPoint, type StoredRoute,
} from './route.js';

export type { ParsedRoute } from './route-import-gpx.js';

/** A ValidationError, so the API answers it with a 400 carrying the message. */
export class RouteImportError extends ValidationError {
  constructor(readonly detail: string, readonly fileName?: string) {
    super(fileName ? `${fileName}: ${detail}` : detail);
  }
}

const NOT_A_ROUTE = 'not GeoJSON, GPX or an encoded polyline';

export function parseRouteFile(text: string, fileName: string): ParsedRoute {
  const body = text.replace(/^\uFEFF/, '');
  const trimmed = body.trim();
  const lineOffset = (body.slice(0, body.length - body.trimStart().length).match(/\n/g) ?? []).length;
  try {
    let parsed: ParsedRoute;
    if (!trimmed) throw new ImportProblem('the file is empty');
    if (trimmed.startsWith('{') || trimmed.startsWith('[')) parsed = fromGeoJson(parseJson(trimmed, lineOffset));
    else if (trimmed.startsWith('<')) parsed = parseGpx(trimmed, lineOffset);
    else parsed = fromPolyline(trimmed);
    const problem = pointCountProblem(parsed.coordinates);
    if (problem) throw new ImportProblem(problem);
    return parsed;
  } catch (err) {
    if (err instanceof ImportProblem) throw new RouteImportError(err.message, fileName);
    throw err;
  }
}

function parseJson(text: string, lineOffset: number): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    const offset = jsonErrorOffset(text);
    const line = offset >= 0 ? `line ${text.slice(0, offset).split('\n').length + lineOffset}: ` : '';
    const near = offset >= 0 ? JSON.stringify(text.slice(offset, offset + 12)) : '';
    const why = offset >= text.length ? 'it ends too early' : `unexpected ${near}`;
    throw new ImportProblem(`${line}not valid JSON (${offset >= 0 ? why : (err as Error).message})`);
  }
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

function fromGeoJson(doc: unknown): ParsedRoute {
  if (!isObject(doc)) throw new ImportProblem('not GeoJSON: expected an object with a "type" (LineString, Feature or FeatureCollection)');
  switch (doc.type) {
    case 'LineString': return { coordinates: coordinateList(doc.coordinates, 'coordinates') };
    case 'Feature': return fromFeature(doc, '');
    case 'FeatureCollection': return fromCollection(doc);
    case undefined: throw new ImportProblem('not GeoJSON: the object has no "type"');
    default: throw new ImportProblem(`type is ${String(doc.type)}, expected LineString, Feature or FeatureCollection`);
  }
}

function fromCollection(doc: Json): ParsedRoute {
  if (!Array.isArray(doc.features)) throw new ImportProblem('features is not a list');
  if (!doc.features.length) throw new ImportProblem('features is empty, expected one LineString feature');
  const lines = doc.features.flatMap((f, i) => (isObject(f) && isObject(f.geometry) && f.geometry.type === 'LineString' ? [i] : []));
  if (lines.length > 1) {
    throw new ImportProblem(`features holds ${lines.length} LineStrings (features[${lines.join('], features[')}]), expected exactly one`);
  }
  const i = lines[0] ?? 0;
  return fromFeature(doc.features[i], `features[${i}].`);
}

function fromFeature(feature: unknown, path: string): ParsedRoute {
  if (!isObject(feature)) throw new ImportProblem(`${path || 'the feature'} is not an object`);
  const geometry = feature.geometry;
  if (!isObject(geometry)) throw new ImportProblem(`${path}geometry is missing`);
  if (geometry.type !== 'LineString') throw new ImportProblem(`${path}geometry.type is ${String(geometry.type)}, expected LineString`);
  const props = isObject(feature.properties) ? feature.properties : {};
  const str = (v: unknown) => (typeof v === 'string' && v.trim() ? v.trim() : undefined);
  return {
    name: str(props.name),
    description: str(props.description) ?? str(props.desc),
    coordinates: coordinateList(geometry.coordinates, `${path}geometry.coordinates`),
  };
}

function coordinateList(value: unknown, path: string): LonLat[] {
  if (!Array.isArray(value)) throw new ImportProblem(`${path} is not a list`);
  return value.map((c, i) => {
    const problem = coordinateProblem(c, `${path}[${i}]`);
    if (problem) throw new ImportProblem(problem);
    return [c[0], c[1]] as LonLat;
  });
}

/** Google encoded polyline text (precision 5); line breaks inside are ignored. */
function fromPolyline(text: string): ParsedRoute {
  const encoded = text.replace(/[\r\n]+/g, '');
  if (!isPolyline(encoded)) throw new ImportProblem(NOT_A_ROUTE);
  const coordinates = decodePolyline(encoded);
  coordinates.forEach(([lon, lat], i) => {
    if (Math.abs(lat) > 90 || Math.abs(lon) > 180) {
      throw new ImportProblem(`${NOT_A_ROUTE}: decoded point ${i} (${lat}, ${lon}) is not on Earth`);
    }
  });
  return { coordinates };
}

/** Chars 63..126; each value ends on a chunk without the 0x20 continuation bit; values come in pairs. */
function isPolyline(s: string): boolean {
  let values = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i) - 63;
    if (c < 0 || c > 63) return false;
    if (c < 0x20) values++;
  }
  return values > 0 && values % 2 === 0 && s.charCodeAt(s.length - 1) - 63 < 0x20;
}

export interface RouteMeta {
  name: string;
  description?: string;
  id?: string;
  /** ms; estimated from a default urban drive when absent. */ duration?: number;
  /** m; the GPS distance when absent. */ distanceByVSS?: number;
  profile?: SpeedPoint[];
  stops?: RouteStop[];
}

/** The stored route record for imported coordinates ([lon, lat]). */
export function routeFromCoordinates(coords: LonLat[], meta: RouteMeta): StoredRoute {
  if (!meta.name?.trim()) throw new RouteImportError('a route needs a name');
  if (meta.duration !== undefined && !(meta.duration > 0)) throw new RouteImportError(`duration must be > 0 ms, got ${meta.duration}`);
  const polyline = encodePolyline(dropRepeats(coords));
  const decoded = decodePolyline(polyline);
  const problem = pointCountProblem(decoded);
  if (problem) throw new RouteImportError(problem);
  const distanceByGPS = Math.round(lineLengthM(decoded) * 1000) / 1000;
  const { profile, stops } = meta;
  const duration = Math.round(meta.duration ?? estimateDurationMs({ polyline, profile, stops }));
  const messageCount = Math.round(duration / 1000);
  return {
    id: meta.id ?? randomUUID(), name: meta.name.trim(), description: meta.description ?? '', polyline,
    messageCount, locationCount: messageCount, distanceByGPS, distanceByVSS: meta.distanceByVSS ?? distanceByGPS, duration,
    ...(profile?.length ? { profile } : {}), ...(stops?.length ? { stops } : {}),
  };
}

/** Consecutive points equal at precision 5 (a GPX track standing still) add nothing to a route. */
function dropRepeats(coords: LonLat[]): LonLat[] {
  const key = ([lon, lat]: LonLat) => `${Math.round(lon * 1e5)},${Math.round(lat * 1e5)}`;
  return coords.filter((c, i) => i === 0 || key(c) !== key(coords[i - 1]));
}
