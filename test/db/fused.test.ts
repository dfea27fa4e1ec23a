import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fuse, runParts, type SqlPart } from '../../db/fused.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { recordStatements } from '../helpers/statements.js';

let t: TestApp;
beforeAll(async () => { t = await buildTestApp(); });
afterAll(async () => { await t?.close(); });

const numbers: SqlPart = {
  statement: {
    ctes: `
  -- a comment (with a parenthesis
  n_in AS (SELECT g AS v FROM generate_series(1, ?::int) g),
  n_twice AS MATERIALIZED (SELECT v * 2 AS w FROM n_in)`,
    main: 'SELECT w, make_timestamptz(2026, 1, 15, 8, 0, w, \'UTC\') AS at FROM n_twice ORDER BY w DESC',
  },
  bindings: [3],
};
const words: SqlPart = { statement: { ctes: `w_in AS (SELECT unnest(?::text[]) AS s)`, main: 'SELECT upper(s) AS s FROM w_in' }, bindings: [['a', 'b']] };

describe('fused statements', () => {
  it('runs several parts in one statement, each part\'s rows in its own order, its bindings its own', async () => {
    const { result, sql } = await recordStatements(t.db.knex, () => runParts(t.db.knex, [numbers, null, words]));
    expect(sql).toHaveLength(1);
    const [n, skipped, w] = result;
    expect(n!.map((r) => r.w)).toEqual([6, 4, 2]);
    expect(new Date(n![0].at as string)).toEqual(new Date(Date.UTC(2026, 0, 15, 8, 0, 6)));
    expect(skipped).toBeNull();
    expect(w).toEqual([{ s: 'A' }, { s: 'B' }]);
  });

  it('runs nothing when every part is null', async () => {
    const { result, sql } = await recordStatements(t.db.knex, () => runParts(t.db.knex, [null, null]));
    expect(sql).toHaveLength(0);
    expect(result).toEqual([null, null]);
  });

  it('refuses parts that define the same CTE, whatever its spelling, and reads names past comments and MATERIALIZED', () => {
    expect(() => fuse([numbers, { ...words, statement: { ...words.statement, ctes: `N_TWICE AS (SELECT 1)` } }])).toThrow('both define the CTE "n_twice"');
  });

  it('gives a data-modifying part\'s RETURNING rows and keeps its writes', async () => {
    await t.db.knex.raw('CREATE TABLE IF NOT EXISTS fused_probe (k int)');
    const insert: SqlPart = { statement: { ctes: 'k_in AS (SELECT unnest(?::int[]) AS k)', main: 'INSERT INTO fused_probe (k) SELECT k FROM k_in RETURNING k' }, bindings: [[7, 8]] };
    const [rows, w] = await runParts(t.db.knex, [insert, words]);
    expect(rows!.map((r) => r.k).sort()).toEqual([7, 8]);
    expect(w).toEqual([{ s: 'A' }, { s: 'B' }]);
    expect((await t.db.knex('fused_probe').whereIn('k', [7, 8]).orderBy('k')).map((r: any) => r.k)).toEqual([7, 8]);
  });

  it('gives a part declaring its columns the same rows, in its order, back from a column each', async () => {
    const columnar: SqlPart = { ...numbers, statement: { ...numbers.statement, columns: ['w', 'at'] } };
    const { result: [rows, w], sql } = await recordStatements(t.db.knex, () => runParts(t.db.knex, [columnar, words]));
    expect(sql[0]).toMatch(/json_build_object\('w', coalesce\(json_agg\(x\.w\)/);
    expect(rows).toEqual((await runParts(t.db.knex, [numbers]))[0]);
    expect(rows!.map((r) => r.w)).toEqual([6, 4, 2]);
    expect(w).toEqual([{ s: 'A' }, { s: 'B' }]);
    const none: SqlPart = { ...columnar, bindings: [0] };
    expect(await runParts(t.db.knex, [none])).toEqual([[]]);
  });
});
