import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import * as m023 from '../../db/migrations/023_hot_tables_sample.js';
import * as m024 from '../../db/migrations/024_attempt_primary_key.js';
import * as m036 from '../../db/migrations/036_time_partitions.js';

/** Columns 023 lists that a later migration dropped (024: the attempts' random id). */
const DROPPED = ['notification_attempts.id'];
/**
 * Targets set by other migrations than 023, which its down leaves: the events' meta (012), the endpoints (031), the
 * rule log's step and coverage run (038).
 */
const OTHERS = {
  'events.meta': 0, 'notifications.endpoint': 10, 'notifications.paused': 10, 'rule_state_log.step': 10,
  'rule_state_log.run_at': 0, 'rule_state_log.run_message': 0, 'rule_state_log.run_message_ts': 0, 'rule_state_log.held': 0,
};

let t: TestApp;
beforeAll(async () => { t = await buildTestApp(); });
afterAll(async () => { await t?.close(); });

/** Each listed column's statistics target, as the catalog has it (-1, or null on PostgreSQL 17+: the default). */
async function targets(): Promise<Record<string, number>> {
  const { rows } = await t.db.knex.raw(`
    SELECT c.relname || '.' || a.attname AS col, coalesce(a.attstattarget, -1)::int AS target
    FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
    WHERE c.relname = ANY(?) AND a.attnum > 0 AND NOT a.attisdropped`, [m023.TARGETS.map(([table]) => table)]);
  return Object.fromEntries((rows as any[]).map((r) => [r.col, Number(r.target)]));
}

describe('ANALYZE samples of the hot tables (migration 023)', () => {
  it('gives every column of the growing tables a small sample or none, and the down migration the default back', async () => {
    const expected = Object.fromEntries(m023.TARGETS.flatMap(([table, cols]) => Object.entries(cols).map(([c, v]) => [`${table}.${c}`, v]))
      .filter(([col]) => !DROPPED.includes(col as string)));
    // every column of those tables is listed (a new column must choose), but those other migrations set
    expect({ ...expected, ...OTHERS }).toEqual(await targets());

    // what ANALYZE then keeps: a key's histogram of at most 11 bounds (target 10; the default keeps up to 101), no
    // statistics at all for a payload
    await t.db.knex.raw(`INSERT INTO message_feed (seq, message_ids, device_ids)
      SELECT 1000000 + k, ARRAY[gen_random_uuid()], ARRAY[gen_random_uuid()] FROM generate_series(1, 500) AS k`);
    await t.db.knex.raw('ANALYZE message_feed');
    const stats = async () => Object.fromEntries((await t.db.knex.raw(`SELECT attname, cardinality(histogram_bounds::text::text[]) AS bounds
      FROM pg_stats WHERE tablename = 'message_feed' AND attname IN ('seq', 'message_ids')`)).rows.map((r: any) => [r.attname, r.bounds]));
    expect(await stats()).toEqual({ seq: 11 });

    // down in migration order: 036 makes the tables plain again, 024 gives the dropped column back
    await m036.down(t.db.knex);
    await m024.down(t.db.knex);
    await m023.down(t.db.knex);
    const after = await targets();
    expect(Object.fromEntries(Object.entries(after).filter(([, v]) => v !== -1))).toEqual(OTHERS);
    await t.db.knex.raw('ANALYZE message_feed');
    expect((await stats()).seq).toBe(101);
    expect(await stats()).toHaveProperty('message_ids');
    await m023.up(t.db.knex);
    await m024.up(t.db.knex);
    await m036.up(t.db.knex);
    expect(await targets()).toEqual({ ...expected, ...OTHERS });
  });
});
