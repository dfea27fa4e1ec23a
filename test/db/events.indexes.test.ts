import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Knex } from 'knex';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import * as m025 from '../../db/migrations/025_event_indexes.js';
import { RULES_SQL } from '../../db/rules/evaluate.sql.js';
import { EVENT_DIFF } from '../../db/trips/finalize.sql.js';
import { recordStatements } from '../helpers/statements.js';

let t: TestApp;
beforeAll(async () => { t = await buildTestApp(); });
afterAll(async () => { await t?.close(); });

const indexes = async () => Object.fromEntries((await t.db.knex.raw(`SELECT c.relname AS name, pg_get_indexdef(i.indexrelid) AS def
  FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = 'events'::regclass`)).rows
  .map((r: any) => [r.name, (r.def as string).replace(/^.* USING /, '')]));

/**
 * The events indexes a statement's plan reads (EXPLAIN only: nothing runs), with sequential scans off: whether an index
 * can serve its reads of events at all, whatever the planner would pick on a table this small.
 */
async function eventIndexesOf(sql: string, bindings: readonly unknown[]): Promise<string[]> {
  return t.db.knex.transaction(async (trx) => {
    await trx.raw('SET LOCAL enable_seqscan = off');
    const { rows } = await trx.raw(`EXPLAIN ${sql}`, bindings as Knex.RawBinding[]);
    const plan = (rows as any[]).map((r) => r['QUERY PLAN'] as string).join('\n');
    const read = new Set([...plan.matchAll(/(?:using|Bitmap Index Scan on) (events_\w+)/g)].map((m) => m[1]));
    if (/Seq Scan on events\b/.test(plan)) read.add('events (sequential)');
    return [...read].sort();
  });
}

const ID = '00000000-0000-4000-8000-000000000001';

describe('events indexes (migration 025)', () => {
  it('keeps an index for each statement that reads events other than by device or id: object and vehicle', async () => {
    expect(await indexes()).toEqual({
      events_pkey: 'btree (id)',
      events_device_ts: 'btree (device_id, ts DESC)',
      events_object_ts: 'btree (object_id, ts)',
      events_vehicle_ts: 'btree (vehicle_id, ts DESC) WHERE (vehicle_id IS NOT NULL)',
    });

    // the rules statement: a late frame's recomputation reads the rule's stored events from `from` on (`stored`)
    expect(await eventIndexesOf(RULES_SQL, [[ID], [new Date().toISOString()], [true], [null], 'a', 'b', 'c', null]))
      .toContain('events_object_ts');

    // a touched trip's stored events (db/trips/finalize.sql.ts EVENT_DIFF), by object id; the stale ones deleted by id
    expect(await eventIndexesOf(EVENT_DIFF, [[ID]])).toEqual(['events_object_ts', 'events_pkey']);

    // GET /vehicles/{id}/events (the repository's own statements): the partial index, as `vehicle_id = ?` matches no null
    const { sent: vehicleReads } = await recordStatements(t.db.knex, () => t.repos.eventsQuery.listForVehicle(
      { id: ID, kind: 'consumer' }, ID, {}, { until: new Date(), limit: 20 }), /"?e"?\."?vehicle_id"?/);
    expect(vehicleReads.length).toBeGreaterThan(0);
    // knex reports PostgreSQL's `$n` placeholders, in order: back to its own `?` to run them again
    for (const s of vehicleReads) expect(await eventIndexesOf(s.sql.replace(/\$\d+/g, '?'), s.bindings)).toEqual(['events_vehicle_ts']);
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
