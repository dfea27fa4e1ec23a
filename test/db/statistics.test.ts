import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import * as m023 from '../../db/migrations/023_hot_tables_sample.js';

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
  it('sets every column of the growing tables a small target or none, and the down migration restores the default', async () => {
    const expected = Object.fromEntries(m023.TARGETS.flatMap(([table, cols]) => Object.entries(cols).map(([c, v]) => [`${table}.${c}`, v])));
    // every column of those tables is listed (a new column must choose), but the events' meta (0 since migration 012)
    expect({ ...expected, 'events.meta': 0 }).toEqual(await targets());
    for (const [table] of m023.TARGETS) await t.db.knex.raw('ANALYZE ??', [table]);

    await m023.down(t.db.knex);
    const after = await targets();
    expect(Object.entries(after).filter(([, v]) => v !== -1)).toEqual([['events.meta', 0]]);
    await m023.up(t.db.knex);
    expect(await targets()).toEqual({ ...expected, 'events.meta': 0 });
  });
});
