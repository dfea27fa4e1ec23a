import type { Static } from 'typebox';
import { ValidationError } from '../../../lib/errors.js';
import { PARAMETERS, isDecimalParameter, isParameter } from '../../../lib/catalog.js';
import type { RulesRepository } from '../../../db/repositories/rules.repository.js';
import { BOUNDARY_TYPES, GEOGRAPHIC_TYPES, type BoundaryInput, type NewRule } from '../../../db/rules/types.js';
import type { CreateRuleBody } from './rules.schemas.js';

export const MAX_BOUNDARIES = 20;
export const MAX_POLYGON_POSITIONS = 10_000;
/** m: half the equator (40,075,017 m / 2); a circle of that radius around any point already covers the Earth. */
export const MAX_RADIUS_M = 20_037_509;

type Body = Record<string, unknown>;
const FIELDS: Record<string, string[]> = {
  parametric: ['parameter', 'min', 'max'], radius: ['lon', 'lat', 'radius'], polygon: ['coordinates'],
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
  return { type: 'parametric', parameter, min, max };
}

function radius(b: Body): BoundaryInput {
  const [lon, lat, r] = [required<number>(b, 'lon'), required<number>(b, 'lat'), required<number>(b, 'radius')];
  checkLonLat(lon, lat, '');
  if (!(r > 0)) fail(`radius must be greater than 0 (meters), got ${r}`);
  if (r > MAX_RADIUS_M) fail(`radius must be at most ${MAX_RADIUS_M} m (half the equator), got ${r}`);
  return { type: 'radius', lon, lat, radius: r };
}

function polygon(b: Body): BoundaryInput {
  const rings = required<number[][][]>(b, 'coordinates');
  if (!rings.length) fail('coordinates must hold at least one ring');
  if (rings.flat().length > MAX_POLYGON_POSITIONS) fail(`a polygon has at most ${MAX_POLYGON_POSITIONS} positions`);
  rings.forEach((ring, i) => {
    if (ring.length < 4) fail(`ring ${i} has ${ring.length} positions; a ring needs at least 4 (the first repeated as the last)`);
    ring.forEach((p, j) => {
      if (p.length !== 2) fail(`ring ${i} position ${j} must be [longitude, latitude], got ${p.length} numbers`);
      checkLonLat(p[0], p[1], `ring ${i} position ${j}: `);
    });
    const [first, last] = [ring[0], ring[ring.length - 1]];
    if (first[0] !== last[0] || first[1] !== last[1]) fail(`ring ${i} is not closed: its first position [${first}] differs from its last [${last}]`);
  });
  return { type: 'polygon', coordinates: rings };
}

const CHECK = { parametric, radius, polygon } as const;

function boundary(b: Body): BoundaryInput {
  const type = b.type as string;
  if (!(BOUNDARY_TYPES as readonly string[]).includes(type)) fail(`unknown boundary type "${type}"; use parametric, radius or polygon`);
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
    throw new ValidationError(`a rule has at most one geographic (radius or polygon) boundary; rule.boundaries[${geographic.join('], rule.boundaries[')}] are all geographic`);
  }
  for (const [i, b] of boundaries.entries()) if (b.type === 'polygon') await checkArea(i, b.coordinates, rules);
  return { name, boundaries };
}

/** Self-intersection and the other shape faults, as PostGIS finds them (ST_IsValidReason). */
async function checkArea(i: number, rings: number[][][], rules: RulesRepository): Promise<void> {
  const [problem] = await rules.polygonProblems(rings);
  if (!problem) return;
  const what = problem.ring === null ? 'its rings do not form a valid polygon' : `ring ${problem.ring} is not a valid ring`;
  throw new ValidationError(`rule.boundaries[${i}] (polygon): ${what}: ${problem.reason}`);
}
