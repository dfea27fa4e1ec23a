import path from 'node:path';
import type { Principal, Repositories } from '../../../db/index.js';
import type { RouteRecord } from '../../../db/repositories/routes.repository.js';
import { Conflict, ValidationError } from '../../../lib/errors.js';
import { parseRouteFile, routeFromCoordinates } from '../../../simulator/route-import.js';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../../../lib/json-bounds.js';
import { refuseNul } from '../../plugins/input-guard.js';

/** A drive longer than this is refused (a run plans every frame of it up front). */
export const MAX_ROUTE_DURATION_MS = 24 * 3600_000;

export interface ImportRouteInput {
  name?: string; description?: string; duration?: number; fileName?: string;
  file?: string; geojson?: object; gpx?: string; polyline?: string;
}

const SOURCES = ['file', 'geojson', 'gpx', 'polyline'] as const;

/** The file text and the name to report it by; a named format must look like that format. */
function sourceText(input: ImportRouteInput): { text: string; fileName: string } {
  const given = SOURCES.filter((k) => input[k] !== undefined);
  if (given.length !== 1) {
    throw new ValidationError(`route needs exactly one of ${SOURCES.join(', ')} (the route file), got ${given.length ? given.join(', ') : 'none'}`);
  }
  const kind = given[0];
  const fileName = input.fileName?.trim() || kind;
  if (kind === 'geojson') return { text: JSON.stringify(input.geojson), fileName };
  const text = input[kind]!;
  const first = text.trimStart()[0];
  if (kind === 'gpx' && first !== '<') throw new ValidationError(`${fileName}: route.gpx is not GPX (it does not start with "<")`);
  if (kind === 'polyline' && ['{', '[', '<'].includes(first)) {
    throw new ValidationError(`${fileName}: route.polyline is not an encoded polyline (it starts with "${first}")`);
  }
  if (kind === 'file' && (first === '{' || first === '[') && tooDeep(text)) {
    // The body's depth bound (api/plugins/input-guard.ts) holds for JSON carried as text too.
    throw new ValidationError(`${fileName}: the GeoJSON nests arrays/objects more than ${MAX_JSON_DEPTH} levels deep`);
  }
  return { text, fileName };
}

function tooDeep(text: string): boolean {
  try { return nestsDeeperThan(JSON.parse(text)); } catch { return false; } // malformed JSON: the parser says where
}

/**
 * Imports a route file (GeoJSON, GPX or encoded polyline) for the calling application: the
 * parser's message (line/field and why) becomes the 400. The name is the given one, else the
 * file's own, else the file name without its extension.
 */
export async function importRoute(repos: Repositories, app: Principal, input: ImportRouteInput): Promise<RouteRecord> {
  const { text, fileName } = sourceText(input);
  const parsed = parseRouteFile(text, fileName);
  // The file's own name and description are stored too: the body's NUL check (input-guard) saw only escapes.
  refuseNul({ name: parsed.name, description: parsed.description }, `${fileName}: the file's `);
  const stem = input.fileName ? path.basename(input.fileName).replace(/\.[^.]+$/, '').trim() : '';
  const name = input.name?.trim() || parsed.name || stem;
  if (!name) throw new ValidationError('route.name is required: the file carries no name');
  if (await repos.routes.nameTaken(app.id, name)) throw new Conflict(`A route named "${name}" already exists`);
  const route = routeFromCoordinates(parsed.coordinates, {
    name, description: input.description ?? parsed.description, duration: input.duration,
  });
  if (route.duration > MAX_ROUTE_DURATION_MS) {
    throw new ValidationError(`the drive would take ${(route.duration / 3600_000).toFixed(1)} h; a route may take at most 24 h`);
  }
  return repos.routes.create(app.id, route);
}
