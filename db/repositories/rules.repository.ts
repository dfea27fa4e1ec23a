import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { offsetPage, type OffsetWindow } from '../paging.js';
import { readableDeviceIds, type Principal } from './scope.js';
import { activeWeek, presentOptions, type Boundary, type BoundaryInput, type NewRule, type RuleOptions, type RuleRecord, type RuleWithBoundaries } from '../rules/types.js';
import { BOUNDARIES_OF } from '../rules/rule-event.sql.js';

const RULE_COLUMNS = ['r.id', 'r.application_id', 'r.device_id', 'r.name', 'r.created_at', 'r.options', 's.evaluated', 's.covered'];
const BOUNDARY_COLUMNS = ['id', 'rule_id', 'type', 'parameter', 'min', 'max', 'lon', 'lat', 'radius', 'coordinates', 'deadband',
  'buffer_m', 'width_m'];

interface RuleRow {
  id: string; application_id: string; device_id: string; name: string; created_at: Date; options: RuleOptions | null;
  evaluated: boolean; covered: boolean;
}
const toRule = (r: RuleRow): RuleRecord => ({
  id: r.id, applicationId: r.application_id, deviceId: r.device_id, name: r.name, createdAt: r.created_at,
  ...r.options, evaluated: Boolean(r.evaluated), covered: Boolean(r.covered),
});

/** A rule_boundaries row (BOUNDARY_COLUMNS): the columns of its type are set (the others are null). */
export type BoundaryRow = { id: string; deadband: number | null; buffer_m: number | null } & (
  | { type: 'parametric'; parameter: string; min: number | null; max: number | null }
  | { type: 'radius'; lon: number; lat: number; radius: number }
  | { type: 'polygon'; coordinates: number[][][] }
  | { type: 'corridor'; coordinates: number[][]; width_m: number });

export function toBoundary(r: BoundaryRow): Boundary {
  const buffer = r.buffer_m === null ? {} : { bufferMeters: r.buffer_m };
  switch (r.type) {
    case 'parametric': return { id: r.id, type: 'parametric', parameter: r.parameter, min: r.min, max: r.max, ...(r.deadband === null ? {} : { deadband: r.deadband }) };
    case 'radius': return { id: r.id, type: 'radius', lon: r.lon, lat: r.lat, radius: r.radius, ...buffer };
    case 'corridor': return { id: r.id, type: 'corridor', coordinates: r.coordinates, widthMeters: r.width_m, ...buffer };
    default: return { id: r.id, type: 'polygon', coordinates: r.coordinates, ...buffer };
  }
}

/** The boundary row, with the PostGIS shape evaluation uses (bound parameters only). */
function boundaryRow(trx: Knex, ruleId: string, b: BoundaryInput, position: number) {
  const row = {
    id: randomUUID(), rule_id: ruleId, position, type: b.type, parameter: null as string | null,
    min: null as number | null, max: null as number | null, lon: null as number | null, lat: null as number | null,
    radius: null as number | null, coordinates: null as string | null, center: null as Knex.Raw | null, area: null as Knex.Raw | null,
    deadband: null as number | null, buffer_m: null as number | null, width_m: null as number | null,
    line: null as Knex.Raw | null, fence: null as Knex.Raw | null,
  };
  if (b.type === 'parametric') Object.assign(row, { parameter: b.parameter, min: b.min, max: b.max, deadband: b.deadband ?? null });
  else row.buffer_m = b.bufferMeters ?? null;
  if (b.type === 'radius') {
    Object.assign(row, { lon: b.lon, lat: b.lat, radius: b.radius });
    row.center = trx.raw('ST_SetSRID(ST_MakePoint(?, ?), 4326)::geography', [b.lon, b.lat]);
    // the circle as a polygon, where a crossing's segment enters and leaves it (migration 038 rule_fence)
    row.fence = trx.raw('rule_fence(ST_SetSRID(ST_MakePoint(?, ?), 4326)::geography, ?)', [b.lon, b.lat, b.radius]);
  }
  if (b.type === 'polygon') {
    row.coordinates = JSON.stringify(b.coordinates);
    row.area = trx.raw('ST_SetSRID(ST_GeomFromGeoJSON(?), 4326)', [JSON.stringify({ type: 'Polygon', coordinates: b.coordinates })]);
    row.fence = row.area;
  }
  if (b.type === 'corridor') {
    const line = JSON.stringify({ type: 'LineString', coordinates: b.coordinates });
    Object.assign(row, { coordinates: JSON.stringify(b.coordinates), width_m: b.widthMeters });
    row.line = trx.raw('ST_SetSRID(ST_GeomFromGeoJSON(?), 4326)::geography', [line]);
    // the band within the width of the line (migration 038 rule_fence)
    row.fence = trx.raw('rule_fence(ST_SetSRID(ST_GeomFromGeoJSON(?), 4326)::geography, ?)', [line, b.widthMeters]);
  }
  return row;
}

/** Deregistration: the application's rules of the device go (state cascades); their events stay. */
export function removeDeviceRules(trx: Knex, applicationId: string, deviceId: string): Promise<number> {
  return trx('rules').where({ application_id: applicationId, device_id: deviceId }).delete();
}

/** Rules: they belong to the application that created them. */
export function rulesRepository(knex: Knex) {
  /** Rules the application owns on devices it can still read. */
  const visible = (trx: Knex, app: Principal) => trx('rules as r').join('rule_states as s', 's.rule_id', 'r.id')
    .where('r.application_id', app.id).whereIn('r.device_id', readableDeviceIds(trx, app));

  return {
    async create(applicationId: string, deviceId: string, input: NewRule, trx: Knex = knex): Promise<RuleWithBoundaries> {
      const now = new Date();
      const options = presentOptions(input);
      const rule = {
        id: randomUUID(), application_id: applicationId, device_id: deviceId, name: input.name, created_at: now,
        min_inside_s: input.minInsideSeconds || null, min_outside_s: input.minOutsideSeconds || null,
        detect_crossings: input.detectCrossings ?? false, active_hours: input.activeHours ? JSON.stringify(input.activeHours) : null,
        active_tz: input.activeHours?.timeZone ?? null, active_week: input.activeHours ? activeWeek(input.activeHours) : null,
        options: Object.keys(options).length ? JSON.stringify(options) : null,
      };
      await trx('rules').insert(rule);
      await trx('rule_boundaries').insert(input.boundaries.map((b, i) => boundaryRow(trx, rule.id, b, i + 1)));
      // the copy rule events carry (rule-event.sql.ts RULE_EVENT_META), built once: rules are immutable
      await trx('rules').update({ boundaries: trx.raw(BOUNDARIES_OF('?'), [rule.id]) }).where('id', rule.id);
      await trx('rule_states').insert({ rule_id: rule.id, evaluated: false, covered: false, updated_at: now });
      return (await this.getById(rule.id, trx))!;
    },

    /** Any rule with its boundaries, whoever owns it (ingest and internal use). */
    async getById(id: string, trx: Knex = knex): Promise<RuleWithBoundaries | undefined> {
      const row = await trx('rules as r').join('rule_states as s', 's.rule_id', 'r.id').select(RULE_COLUMNS).where('r.id', id).first();
      if (!row) return undefined;
      return { ...toRule(row), boundaries: await this.boundariesOf([id], trx).then((m) => m.get(id) ?? []) };
    },

    async get(app: Principal, id: string, trx: Knex = knex): Promise<RuleWithBoundaries | undefined> {
      const row = await visible(trx, app).select('r.id').where('r.id', id).first();
      return row ? this.getById(id, trx) : undefined;
    },

    /** Boundaries of several rules, in their given order. */
    async boundariesOf(ruleIds: string[], trx: Knex = knex): Promise<Map<string, Boundary[]>> {
      const out = new Map<string, Boundary[]>();
      if (!ruleIds.length) return out;
      const rows = await trx('rule_boundaries').select(BOUNDARY_COLUMNS).whereIn('rule_id', ruleIds).orderBy(['rule_id', 'position']);
      for (const r of rows) out.set(r.rule_id, [...(out.get(r.rule_id) ?? []), toBoundary(r)]);
      return out;
    },

    /** The application's rules of a device, newest first, without boundaries. */
    async list(app: Principal, deviceId: string, w: OffsetWindow, trx: Knex = knex) {
      const base = () => visible(trx, app).select(RULE_COLUMNS).where('r.device_id', deviceId);
      const page = await offsetPage<RuleRow>(base, [{ column: 'r.created_at', order: 'desc' }, { column: 'r.id', order: 'desc' }], w);
      return { total: page.total, rules: page.rows.map(toRule) };
    },

    async delete(app: Principal, id: string, trx: Knex = knex): Promise<boolean> {
      const owned = await visible(trx, app).select('r.id').where('r.id', id).first();
      if (!owned) return false;
      // a subscription to a rule's events lives and dies with the rule (its notifications go with it; events stay)
      await trx('subscriptions').where({ object_type: 'rule', object_id: id }).delete();
      return (await trx('rules').where('id', id).delete()) > 0;
    },

    /** Whether the database knows a time zone by this name (it evaluates schedules: db/rules/evaluate.sql.ts). */
    async knowsTimeZone(name: string, trx: Knex = knex): Promise<boolean> {
      const { rows } = await trx.raw('SELECT 1 FROM pg_timezone_names WHERE name = ? LIMIT 1', [name]);
      return rows.length > 0;
    },

    /**
     * Why each ring, and then the polygon they make, is not a valid area (PostGIS ST_IsValidReason),
     * or [] when valid. Rings must already be closed with ≥ 4 in-range positions.
     */
    async polygonProblems(rings: number[][][], trx: Knex = knex): Promise<{ ring: number | null; reason: string }[]> {
      const shapes = rings.map((ring) => JSON.stringify({ type: 'Polygon', coordinates: [ring] }));
      if (rings.length > 1) shapes.push(JSON.stringify({ type: 'Polygon', coordinates: rings }));
      const { rows } = await trx.raw(
        `SELECT t.n::int - 1 AS n, ST_IsValidReason(ST_GeomFromGeoJSON(t.g)) AS reason
         FROM unnest(?::text[]) WITH ORDINALITY AS t(g, n) ORDER BY t.n`, [shapes]);
      return (rows as { n: number; reason: string }[])
        .filter((r) => r.reason !== 'Valid Geometry')
        .map((r) => ({ ring: r.n < rings.length ? r.n : null, reason: r.reason }));
    },
  };
}
export type RulesRepository = ReturnType<typeof rulesRepository>;
