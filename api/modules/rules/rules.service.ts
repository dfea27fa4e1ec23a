import type { Static } from 'typebox';
import { ValidationError } from '../../../lib/errors.js';
import { PARAMETERS, isDecimalParameter, isParameter } from '../../../lib/catalog.js';
import type { RulesRepository } from '../../../db/repositories/rules.repository.js';
import polyline from '@mapbox/polyline';
import { BOUNDARY_TYPES, GEOGRAPHIC_TYPES, WEEKDAYS, type ActiveHours, type BoundaryInput, type NewRule, type RuleOptions } from '../../../db/rules/types.js';
import type { CreateRuleBody } from './rules.schemas.js';

export const MAX_BOUNDARIES = 20;
export const MAX_POLYGON_POSITIONS = 10_000;
export const MAX_CORRIDOR_POSITIONS = 10_000;
export const MAX_CORRIDOR_WIDTH_M = 50_000;
export const MAX_BUFFER_M = 100_000;
/** s: a day; a longer dwell would hold an event back past the recompute bound of late frames. */
export const MAX_DWELL_S = 86_400;
export const MAX_WINDOWS = 14;
/** m: half the equator (40,075,017 m / 2); a circle of that radius around any point already covers the Earth. */
export const MAX_RADIUS_M = 20_037_509;

type Body = Record<string, unknown>;
const FIELDS: Record<string, string[]> = {
  parametric: ['parameter', 'min', 'max', 'deadband'], radius: ['lon', 'lat', 'radius', 'bufferMeters'],
  polygon: ['coordinates', 'bufferMeters'], corridor: ['coordinates', 'polyline', 'widthMeters', 'bufferMeters'],
};

class BoundaryError extends Error {}
const fail = (message: string): never => { throw new BoundaryError(message); };

function required<T>(b: Body, field: string): T {
  if (b[field] === undefined || b[field] === null) fail(`${field} is required`);
  return b[field] as T;
}

function checkLonLat(lon: number, lat: number, where: string): void {
  if (lon < -180 || lon > 180) fail(`${where}longitude ${lon} is out of range -180..180`);
  if (lat < -90 || lat > 90) fail(`${where}latitude ${lat} is out of range -90..90`);
}

/** An optional number in [0, max]; undefined when absent or null. */
function optional(b: Body, field: string, max: number, unit: string): number | undefined {
  const v = b[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !(v >= 0 && v <= max)) fail(`${field} must be a number from 0 to ${max}${unit}, got ${JSON.stringify(v)}`);
  return v as number;
}

const buffer = (b: Body) => {
  const v = optional(b, 'bufferMeters', MAX_BUFFER_M, ' m');
  return v === undefined ? {} : { bufferMeters: v };
};

function parametric(b: Body): BoundaryInput {
  const parameter = required<string>(b, 'parameter');
  if (!isParameter(parameter)) fail(`unknown parameter "${parameter}"`);
  if (!isDecimalParameter(parameter)) fail(`parameter "${parameter}" is not a decimal parameter; only decimal parameters can be used in rules`);
  const min = (b.min ?? null) as number | null;
  const max = (b.max ?? null) as number | null;
  if (min === null && max === null) fail('min and max cannot both be null');
  // the parameter's catalog range (its unit's): a bound past it never matches, and 1e308 overflowed in SQL
  const { min: low, max: high } = PARAMETERS.get(parameter)!;
  for (const [name, v] of [['min', min], ['max', max]] as const) {
    if (v !== null && !(v >= low! && v <= high!)) fail(`${name} ${v} is outside ${parameter}'s range ${low}..${high}`);
  }
  if (min !== null && max !== null && min > max) fail(`min ${min} is greater than max ${max}`);
  const deadband = optional(b, 'deadband', high! - low!, ` (${parameter}'s range)`);
  return { type: 'parametric', parameter, min, max, ...(deadband === undefined ? {} : { deadband }) };
}

function radius(b: Body): BoundaryInput {
  const [lon, lat, r] = [required<number>(b, 'lon'), required<number>(b, 'lat'), required<number>(b, 'radius')];
  checkLonLat(lon, lat, '');
  if (!(r > 0)) fail(`radius must be greater than 0 (meters), got ${r}`);
  if (r > MAX_RADIUS_M) fail(`radius must be at most ${MAX_RADIUS_M} m (half the equator), got ${r}`);
  return { type: 'radius', lon, lat, radius: r, ...buffer(b) };
}

function polygon(b: Body): BoundaryInput {
  const rings = required<number[][][]>(b, 'coordinates');
  if (!rings.length) fail('coordinates must hold at least one ring');
  rings.forEach((ring, i) => { if (!Array.isArray(ring)) fail(`ring ${i} must be an array of [longitude, latitude] positions`); });
  if (rings.flat().length > MAX_POLYGON_POSITIONS) fail(`a polygon has at most ${MAX_POLYGON_POSITIONS} positions`);
  rings.forEach((ring, i) => {
    ring.forEach((p, j) => { if (!isPosition(p)) fail(`ring ${i} position ${j} must be [longitude, latitude], got ${JSON.stringify(p)?.slice(0, 60)}`); });
    if (ring.length < 4) fail(`ring ${i} has ${ring.length} positions; a ring needs at least 4 (the first repeated as the last)`);
    ring.forEach((p, j) => {
      if (p.length !== 2) fail(`ring ${i} position ${j} must be [longitude, latitude], got ${p.length} numbers`);
      checkLonLat(p[0], p[1], `ring ${i} position ${j}: `);
    });
    const [first, last] = [ring[0], ring[ring.length - 1]];
    if (first[0] !== last[0] || first[1] !== last[1]) fail(`ring ${i} is not closed: its first position [${first}] differs from its last [${last}]`);
  });
  return { type: 'polygon', coordinates: rings, ...buffer(b) };
}

const isPosition = (p: unknown): p is number[] => Array.isArray(p) && p.every((n) => typeof n === 'number' && Number.isFinite(n));

/** A line given as GeoJSON positions or as an encoded polyline (precision 5: [lat, lon] pairs), as [lon, lat]. */
function linePositions(b: Body): number[][] {
  if (b.coordinates !== undefined && b.polyline !== undefined) fail('give the line as coordinates or as polyline, not both');
  if (typeof b.polyline === 'string') {
    if (b.polyline.length > MAX_CORRIDOR_POSITIONS * 12) fail(`polyline is too long: a corridor has at most ${MAX_CORRIDOR_POSITIONS} positions`);
    let decoded: [number, number][];
    try { decoded = polyline.decode(b.polyline, 5); } catch { return fail('polyline is not a valid encoded polyline'); }
    if (!decoded.every(isPosition)) fail('polyline is not a valid encoded polyline');
    return decoded.map(([lat, lon]) => [lon, lat]);
  }
  const line = required<unknown[]>(b, 'coordinates');
  if (!Array.isArray(line)) fail('coordinates must be an array of [longitude, latitude] positions');
  if (line.length > MAX_CORRIDOR_POSITIONS) fail(`a corridor has at most ${MAX_CORRIDOR_POSITIONS} positions`);
  line.forEach((p, j) => {
    if (!isPosition(p) || p.length !== 2) fail(`position ${j} must be [longitude, latitude], got ${JSON.stringify(p)?.slice(0, 60)}`);
  });
  return line as number[][];
}

function corridor(b: Body): BoundaryInput {
  const line = linePositions(b);
  line.forEach((p, j) => checkLonLat(p[0], p[1], `position ${j}: `));
  // consecutive repeats carry no direction; a line needs two distinct positions
  const distinct = line.filter((p, j) => j === 0 || p[0] !== line[j - 1][0] || p[1] !== line[j - 1][1]);
  if (distinct.length < 2) fail(`a corridor's line needs at least 2 distinct positions, got ${distinct.length}`);
  const width = required<number>(b, 'widthMeters');
  if (typeof width !== 'number' || !(width > 0 && width <= MAX_CORRIDOR_WIDTH_M)) {
    fail(`widthMeters must be greater than 0 and at most ${MAX_CORRIDOR_WIDTH_M} (meters), got ${JSON.stringify(width)}`);
  }
  return { type: 'corridor', coordinates: distinct, widthMeters: width, ...buffer(b) };
}

const CHECK = { parametric, radius, polygon, corridor } as const;

function boundary(b: Body): BoundaryInput {
  const type = b.type as string;
  if (!(BOUNDARY_TYPES as readonly string[]).includes(type)) fail(`unknown boundary type "${type}"; use parametric, radius, polygon or corridor`);
  const extra = Object.keys(b).find((k) => k !== 'type' && k !== 'id' && !FIELDS[type].includes(k));
  if (extra) fail(`field "${extra}" does not belong to a ${type} boundary (it takes ${FIELDS[type].join(', ')})`);
  return CHECK[type as keyof typeof CHECK](b);
}

const label = (i: number, b: Body) =>
  `rule.boundaries[${i}]${typeof b.type === 'string' && FIELDS[b.type] ? ` (${b.type})` : ''}`;

/** Checks a rule to create (docs/concepts/rules-events-webhooks.md); every problem names the boundary and why. */
export async function validateRule(input: Static<typeof CreateRuleBody>['rule'], rules: RulesRepository): Promise<NewRule> {
  const name = input.name.trim();
  if (!name) throw new ValidationError('rule.name must not be blank');
  if (!input.boundaries.length) throw new ValidationError('rule.boundaries must hold at least one boundary');
  if (input.boundaries.length > MAX_BOUNDARIES) throw new ValidationError(`a rule has at most ${MAX_BOUNDARIES} boundaries`);
  const boundaries = input.boundaries.map((b: Body, i) => {
    try { return boundary(b); } catch (err) {
      if (err instanceof BoundaryError) throw new ValidationError(`${label(i, b)}: ${err.message}`);
      throw err;
    }
  });
  const geographic = boundaries.flatMap((b, i) => ((GEOGRAPHIC_TYPES as readonly string[]).includes(b.type) ? [i] : []));
  if (geographic.length > 1) {
    throw new ValidationError(`a rule has at most one geographic (radius, polygon or corridor) boundary; rule.boundaries[${geographic.join('], rule.boundaries[')}] are all geographic`);
  }
  for (const [i, b] of boundaries.entries()) if (b.type === 'polygon') await checkArea(i, b.coordinates, rules);
  const options = await ruleOptions(input, geographic.length > 0, rules);
  return { name, boundaries, ...options };
}

const dwell = (v: number | undefined, field: string) => {
  if (v === undefined || v === null) return {};
  if (!(v >= 0 && v <= MAX_DWELL_S)) throw new ValidationError(`rule.${field} must be from 0 to ${MAX_DWELL_S} (seconds), got ${v}`);
  return v > 0 ? { [field]: v } : {};
};

const HHMM = /^([01]\d|2[0-3]):[0-5]\d$/;

/** The options of a rule to create, checked; the time zone must be one the database knows (it evaluates the windows). */
async function ruleOptions(input: Static<typeof CreateRuleBody>['rule'], geographic: boolean, rules: RulesRepository): Promise<RuleOptions> {
  if (input.detectCrossings && !geographic) {
    throw new ValidationError('rule.detectCrossings needs a geographic (radius, polygon or corridor) boundary: crossings are between fixes');
  }
  const hours = input.activeHours;
  if (hours) {
    if (!hours.windows.length || hours.windows.length > MAX_WINDOWS) throw new ValidationError(`rule.activeHours.windows must hold 1 to ${MAX_WINDOWS} windows`);
    hours.windows.forEach((w, i) => {
      const where = `rule.activeHours.windows[${i}]`;
      if (!w.days.length) throw new ValidationError(`${where}.days must name at least one day (${WEEKDAYS.join(', ')})`);
      const bad = w.days.find((d) => !(WEEKDAYS as readonly string[]).includes(d));
      if (bad !== undefined) throw new ValidationError(`${where}.days: unknown day "${bad}"; use ${WEEKDAYS.join(', ')}`);
      if (new Set(w.days).size !== w.days.length) throw new ValidationError(`${where}.days names a day twice`);
      for (const f of ['from', 'until'] as const) {
        if (!HHMM.test(w[f])) throw new ValidationError(`${where}.${f} must be HH:MM (00:00 to 23:59), got ${JSON.stringify(w[f])}`);
      }
    });
    if (!(await rules.knowsTimeZone(hours.timeZone))) {
      throw new ValidationError(`rule.activeHours.timeZone: unknown time zone "${hours.timeZone}"; use an IANA name such as Europe/Berlin`);
    }
  }
  return {
    ...dwell(input.minInsideSeconds, 'minInsideSeconds'), ...dwell(input.minOutsideSeconds, 'minOutsideSeconds'),
    ...(input.detectCrossings ? { detectCrossings: true } : {}),
    ...(hours ? { activeHours: { timeZone: hours.timeZone, windows: hours.windows.map((w) => ({ days: w.days, from: w.from, until: w.until })) } as ActiveHours } : {}),
  };
}

/** Self-intersection and the other shape faults, as PostGIS finds them (ST_IsValidReason). */
async function checkArea(i: number, rings: number[][][], rules: RulesRepository): Promise<void> {
  const [problem] = await rules.polygonProblems(rings);
  if (!problem) return;
  const what = problem.ring === null ? 'its rings do not form a valid polygon' : `ring ${problem.ring} is not a valid ring`;
  throw new ValidationError(`rule.boundaries[${i}] (polygon): ${what}: ${problem.reason}`);
}
