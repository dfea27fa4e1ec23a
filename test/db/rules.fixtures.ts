import type { Knex } from 'knex';
import { ensurePartitions } from '../../db/partitions.js';
import { MESSAGE_PARTITIONS } from '../../db/retention/time-tables.js';
import type { TestApp } from '../helpers/app.js';
import { evaluateRulesDeriver, type RuleDeriverContext } from '../../db/rules/evaluate.js';
import { EVENT_COLUMNS, toEvent, type EventRecord, type EventRow } from '../../db/repositories/events.repository.js';
import type { NewRule } from '../../db/rules/types.js';
import { messageRow } from '../helpers/telemetry.factory.js';
import { uuid7 } from '../../lib/uuid7.js';

/** A message: its time, position and other telemetry. */
export interface TestMessage { ts: Date; lon?: number; lat?: number; data?: Record<string, unknown> }

/** Meters → degrees of latitude (1° ≈ 110.6–111.7 km on the WGS 84 spheroid); tests keep wide margins around boundaries. */
export const metersNorth = (lat: number, meters: number) => lat + meters / 111_000;

/** A 50 m radius rule around a point in Paris, and frames 5 m (inside) and 300 m (outside) north of it. */
export const DEPOT = { lon: 2.3522, lat: 48.8566 };
export const depotRule = { name: 'depot', boundaries: [{ type: 'radius' as const, lon: DEPOT.lon, lat: DEPOT.lat, radius: 50 }] };
export const insideDepot = (s: number, data?: Record<string, unknown>): TestMessage => ({ ts: at(s), lon: DEPOT.lon, lat: metersNorth(DEPOT.lat, 5), data });
export const outsideDepot = (s: number, data?: Record<string, unknown>): TestMessage => ({ ts: at(s), lon: DEPOT.lon, lat: metersNorth(DEPOT.lat, 300), data });

export const BASE_TS = Date.UTC(2026, 0, 15, 12, 0, 0);
export const at = (seconds: number) => new Date(BASE_TS + seconds * 1000);

/** Stores messages as the gateway does (data with a GeoJSON location, a PostGIS point), received now. */
async function storeMessages(trx: Knex, deviceId: string, messages: TestMessage[]) {
  const stored = messages.map((m) => {
    const hasLoc = m.lon !== undefined && m.lat !== undefined;
    const data = { ...(hasLoc ? { location: { type: 'Point', coordinates: [m.lon, m.lat] } } : {}), ...(m.data ?? {}) };
    return { id: uuid7(m.ts.getTime()), ts: m.ts, data, lat: m.lat ?? null, lon: m.lon ?? null, kind: 'telemetry' };
  });
  await ensurePartitions(trx, MESSAGE_PARTITIONS, stored.map((m) => m.ts));
  for (const m of stored) await trx('messages').insert(messageRow(trx, { id: m.id, deviceId, ts: m.ts, data: m.data }));
  return stored.sort((a, b) => a.ts.getTime() - b.ts.getTime());
}

/**
 * One device's part of an ingest batch as the rules stage gets it: the device's newest stored timestamp before the
 * messages (read first, as the pipeline's insert statement does), then the messages stored.
 */
export async function storeBatch(t: TestApp, trx: Knex, deviceId: string, messages: TestMessage[]) {
  const previousLatest = (await t.repos.ingest.latestTimestamps([deviceId], trx)).get(deviceId) ?? null;
  const stored = await storeMessages(trx, deviceId, messages);
  return { deviceId, previousLatest, stored, messages: stored.map((m) => ({ id: m.id, timestamp: m.ts })) };
}

/**
 * One ingest batch: store the messages and run the rule deriver in the same transaction, as the pipeline does.
 * Returns the events it stored, read back whole (meta included), in the order it returned them.
 */
export async function ingest(t: TestApp, deviceId: string, messages: TestMessage[], ctx: RuleDeriverContext = {}): Promise<EventRecord[]> {
  return t.db.knex.transaction(async (trx) => {
    const { previousLatest, stored } = await storeBatch(t, trx, deviceId, messages);
    const events = await evaluateRulesDeriver(trx, { deviceId, messages: stored, previousLatest }, { config: t.config, ...ctx });
    const rows = await trx('events').select(EVENT_COLUMNS).whereIn('id', events.map((e) => e.id));
    const byId = new Map(rows.map((r: EventRow) => [r.id, toEvent(r)]));
    return events.map((e) => byId.get(e.id)!);
  });
}

export async function createRule(t: TestApp, app: { id: string }, deviceId: string, rule: NewRule) {
  return t.db.knex.transaction((trx) => t.repos.rules.create(app.id, deviceId, rule, trx));
}

/** The device's stored rule events, oldest first, as [eventType, firstEval, message timestamp]. */
export async function ruleEventTrail(t: TestApp, ruleId: string) {
  const rows = await t.db.knex('events').select('event_type', 'meta', 'ts').where({ object_type: 'rule', object_id: ruleId }).orderBy('ts');
  return rows.map((r: any) => [r.event_type, r.meta.firstEval, new Date(r.ts).toISOString()]);
}
