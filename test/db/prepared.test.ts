import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prepared } from '../../db/prepared.js';
import { createTestDb } from '../helpers/db.js';
import { autoAnalyze, pgliteOf } from '../../db/connection.js';

let db: Awaited<ReturnType<typeof createTestDb>>;
beforeAll(async () => { db = await createTestDb(); });
afterAll(async () => { await db?.close(); });

const SQL = `SELECT x * ?::int AS y FROM unnest(?::int[]) AS t(x) ORDER BY x`;

describe('prepared statements of the ingest path', () => {
  it('answers like a raw statement, again and again, inside and outside a transaction', async () => {
    for (let i = 1; i <= 7; i++) {
      const { rows } = await prepared(db.knex, SQL, [i, [1, 2, 3]]);
      expect(rows.map((r: { y: number }) => r.y)).toEqual([i, 2 * i, 3 * i]);
    }
    await db.knex.transaction(async (trx) => {
      const { rows } = await prepared(trx, SQL, [10, [4]]);
      expect(rows).toEqual([{ y: 40 }]);
    });
  });

  it('gives the rows and counts the driver itself gives: parsed values, nulls, repeated names, changed rows', async () => {
    const select = `SELECT 9007199254740::int8 AS big, 2.5::numeric AS num, NULL::text AS nothing, '{"a":[1,null]}'::jsonb AS doc,
      ARRAY['x', NULL]::text[] AS texts, ARRAY['2026-11-28T10:00:00Z'::timestamptz, NULL] AS times, '2026-11-28T09:00:00.123Z'::timestamptz AS at,
      ?::int AS same, 7 AS same, '\\x00ff'::bytea AS raw, 'é'::text AS t`;
    const named = await prepared(db.knex, select, [1]);
    // the reference: PGlite's own query() (its parseResults), which the knex client does not call; on PostgreSQL the pg driver
    const pglite = pgliteOf(db.knex);
    expect(Boolean(pglite)).toBe(db.kind === 'pglite');
    const reference = pglite ? await pglite.query(select.replace('?', '$1'), [1]) : await db.knex.raw(select, [1]);
    expect(named.rows).toEqual(reference.rows);
    expect(named.rows[0]).toMatchObject({ big: 9007199254740, num: 2.5, nothing: null, doc: { a: [1, null] }, texts: ['x', null], same: 7, t: 'é',
      times: [new Date('2026-11-28T10:00:00Z'), null], at: new Date('2026-11-28T09:00:00.123Z') });
    expect(Buffer.from(named.rows[0].raw as Uint8Array).toString('hex')).toBe('00ff');
    expect(await prepared(db.knex, 'SELECT 1 AS one WHERE false', [])).toMatchObject({ rows: [], rowCount: 0 });
    await db.knex.raw('CREATE TEMP TABLE counted (x int)');
    const inserted = await prepared(db.knex, 'INSERT INTO counted SELECT unnest(?::int[])', [[1, 2, 3]]);
    const updated = await prepared(db.knex, 'UPDATE counted SET x = x + 1 WHERE x > ?::int', [1]);
    expect([inserted.rowCount, updated.rowCount]).toEqual([3, 2]);
    await db.knex.raw('DROP TABLE counted');
  });

  it('is a named statement, parsed once per connection (or PGlite instance), and still a knex query event', async () => {
    const seen: string[] = [];
    const onQuery = (q: { sql: string }) => seen.push(q.sql);
    db.knex.on('query', onQuery);
    await db.knex.transaction(async (trx) => {
      await prepared(trx, SQL, [2, [1]]);
      await prepared(trx, SQL, [3, [1]]);
      // one named statement, parsed once and run twice (both databases: PGlite's runs over the extended protocol)
      const { rows } = await trx.raw(`SELECT name, (generic_plans + custom_plans)::int AS runs FROM pg_prepared_statements WHERE statement = ?`, [
        SQL.replace('?::int', '$1::int').replace('?::int[]', '$2::int[]')]);
      expect(rows).toHaveLength(1);
      expect(rows[0].name).toMatch(/^dw_[0-9a-f]{24}$/);
      expect(rows[0].runs).toBeGreaterThanOrEqual(2);
    });
    db.knex.off('query', onQuery);
    expect(seen.filter((s) => s.includes('AS y FROM unnest('))).toHaveLength(2);
  });

  it('answers many at once outside a transaction, each its own', async () => {
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => prepared(db.knex, SQL, [i, [1, 2]])));
    expect(answers.map((a) => a.rows.map((r: { y: number }) => r.y))).toEqual(Array.from({ length: 20 }, (_, i) => [i, 2 * i]));
  });

  it('fails like a raw statement (the transaction aborts), and the next run of the same statement works', async () => {
    const DIV = `SELECT 10 / ?::int AS q`;
    await expect(prepared(db.knex, DIV, [0])).rejects.toThrow(/division by zero/);
    await expect(db.knex.transaction(async (trx) => {
      await prepared(trx, DIV, [0]).catch(() => undefined);
      await trx.raw('SELECT 1');
    })).rejects.toThrow(/current transaction is aborted/);
    expect((await prepared(db.knex, DIV, [5])).rows).toEqual([{ q: 2 }]);
    await db.knex.transaction(async (trx) => { expect((await prepared(trx, DIV, [2])).rows).toEqual([{ q: 5 }]); });
  });

  it('re-analyzes a grown table within seconds (PGlite has no autovacuum; PostgreSQL\'s looks once a minute)', async () => {
    await db.knex.raw(`CREATE TABLE grows (id int, pad text)`);
    const analyzer = autoAnalyze(db.knex, 50, ['grows']);
    try {
      await db.knex.raw(`INSERT INTO grows SELECT g, repeat('x', 200) FROM generate_series(1, 20000) g`);
      await expect.poll(async () => (await db.knex.raw(`SELECT reltuples::float8 AS n FROM pg_class WHERE relname = 'grows'`)).rows[0].n,
        { timeout: 10_000 }).toBe(20000);
    } finally { await analyzer.stop(); }
  });

  it('starts no analysis once stopped, and its stop waits for the one running (the pool may close right after)', async () => {
    const names = Array.from({ length: 6 }, (_, i) => `stopping_${i}`);
    for (const t of names) await db.knex.raw(`CREATE TABLE ${t} AS SELECT g AS id, repeat('x', 200) AS pad FROM generate_series(1, 300) g`);
    const analyzed: string[] = [];
    let analyzer: ReturnType<typeof autoAnalyze> | null = null;
    let stopping: Promise<void> | null = null;
    // stopped as its first ANALYZE is sent: that one may finish, no other may start
    const onQuery = (q: { sql: string }) => {
      if (!/^ANALYZE/i.test(q.sql)) return;
      analyzed.push(q.sql);
      stopping ??= analyzer!.stop();
    };
    db.knex.on('query', onQuery);
    try {
      analyzer = autoAnalyze(db.knex, 10, names);
      await expect.poll(() => stopping, { timeout: 10_000, interval: 1 }).not.toBeNull();
      await stopping;
      expect(analyzed).toHaveLength(1);
      await new Promise((r) => setTimeout(r, 300));
      expect(analyzed).toHaveLength(1);
    } finally { db.knex.off('query', onQuery); }
  });

  it('analyzes a small table once it has rows, then only as it doubles (each analysis re-plans its readers)', async () => {
    // A generic plan made while a small table has no statistics may keep a poor index (as the rules statement would for
    // its notifications): the analysis that follows re-plans its readers.
    await db.knex.raw(`CREATE TABLE small_config (id int, app int, pad text)`);
    const counted = async () => (await db.knex.raw(`SELECT reltuples::float8 AS n FROM pg_class WHERE relname = 'small_config'`)).rows[0].n;
    const add = (from: number, to: number) =>
      db.knex.raw(`INSERT INTO small_config SELECT g, 1, repeat('x', 200) FROM generate_series(?::int, ?::int) g`, [from, to]);
    const analyzer = autoAnalyze(db.knex, 50); // every table of the schema, by default
    try {
      await add(1, 200);
      await expect.poll(counted, { timeout: 10_000 }).toBe(200);
      await add(201, 280); // +40%: a tenth would have analyzed it again
      await new Promise((r) => setTimeout(r, 2_500)); // PostgreSQL's counters reach pg_stat within a second or so
      expect(await counted()).toBe(200);
      await add(281, 450); // more than doubled
      await expect.poll(counted, { timeout: 10_000 }).toBe(450);
    } finally { await analyzer.stop(); }
  });

  it('keeps JIT off on PostgreSQL connections (PostGIS costs would JIT-compile millisecond statements)', async () => {
    if (db.kind !== 'pg') return;
    const { rows } = await db.knex.raw(`SELECT current_setting('jit') AS jit`);
    expect(rows[0].jit).toBe('off');
  });
});
