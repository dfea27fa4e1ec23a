import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Knex } from 'knex';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import * as m025 from '../../db/migrations/025_event_indexes.js';

let t: TestApp;
beforeAll(async () => { t = await buildTestApp(); });
afterAll(async () => { await t?.close(); });

const indexes = async () => Object.fromEntries((await t.db.knex.raw(`SELECT c.relname AS name, pg_get_indexdef(i.indexrelid) AS def
  FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = 'events'::regclass`)).rows
  .map((r: any) => [r.name, (r.def as string).replace(/^.* USING /, '')]));

/** The index a statement's plan reads, with sequential scans off: whether the index can serve it at all. */
async function indexOf(sql: string, bindings: Knex.RawBinding[]): Promise<string[]> {
  return t.db.knex.transaction(async (trx) => {
    await trx.raw('SET LOCAL enable_seqscan = off');
    const { rows } = await trx.raw(`EXPLAIN ${sql}`, bindings);
    return [...new Set((rows as any[]).map((r) => r['QUERY PLAN'] as string).join('\n').match(/events_\w+/g) ?? [])];
  });
}

const ID = '00000000-0000-4000-8000-000000000001';

describe('events indexes (migration 025)', () => {
  it('keeps an index for each query that reads events other than by device: object (rules, trips, filter) and vehicle', async () => {
    expect(await indexes()).toEqual({
      events_pkey: 'btree (id)',
      events_device_ts: 'btree (device_id, ts DESC)',
      events_object_ts: 'btree (object_id, ts)',
      events_vehicle_ts: 'btree (vehicle_id, ts DESC) WHERE (vehicle_id IS NOT NULL)',
    });
    // a rule's events from a timestamp on (db/rules/evaluate.sql.ts, a late frame's recomputation)
    expect(await indexOf(`SELECT id FROM events e WHERE e.object_type = 'rule' AND e.object_id = ? AND e.ts >= ?`, [ID, new Date()]))
      .toEqual(['events_object_ts']);
    // a trip's events (db/trips/segment.sql.ts, finalize.sql.ts): by object id, joined
    expect(await indexOf(`SELECT e.id FROM unnest(?::uuid[]) AS r(id) JOIN events e ON e.object_id = r.id`, [[ID]]))
      .toEqual(['events_object_ts']);
    // a vehicle's events, newest first (GET /vehicles/{id}/events): the partial index, as no null matches
    expect(await indexOf(`SELECT id FROM events e WHERE e.vehicle_id = ? ORDER BY e.ts DESC LIMIT 20`, [ID]))
      .toEqual(['events_vehicle_ts']);
  });

  it('goes down to the earlier indexes and up again', async () => {
    const now = await indexes();
    await m025.down(t.db.knex);
    expect(await indexes()).toEqual({
      events_pkey: 'btree (id)',
      events_device_ts: 'btree (device_id, ts DESC)',
      events_vehicle_ts: 'btree (vehicle_id, ts DESC)',
      events_object: 'btree (object_id)',
      events_rule_ts: "btree (object_id, ts) WHERE (object_type = 'rule'::text)",
    });
    await m025.up(t.db.knex);
    expect(await indexes()).toEqual(now);
  });
});
