import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDb } from '../helpers/db.js';
import { unwindOnError } from '../../db/pglite-stack.js';

let db: Awaited<ReturnType<typeof createTestDb>>;
beforeAll(async () => {
  db = await createTestDb();
  await db.knex.raw('CREATE TABLE failing_unique (id int PRIMARY KEY)');
  await db.knex.raw('INSERT INTO failing_unique VALUES (1)');
  await db.knex.raw('CREATE TABLE failing_kept (n int)');
  await db.knex.raw(`CREATE FUNCTION failing_plpgsql() RETURNS int LANGUAGE plpgsql AS $$
    BEGIN RAISE EXCEPTION 'refused by plpgsql'; END $$`);
});
afterAll(async () => { await db?.close(); });

/** Statements that fail, each with the error it must answer (and no other). */
const KINDS: { kind: string; sql: string; bindings: unknown[]; error: RegExp }[] = [
  // the transactions list's window at the edge of JavaScript's dates
  { kind: 'timestamp', sql: 'SELECT ?::timestamptz AS t', bindings: [new Date(-8640000000000000)], error: /out of range/ },
  { kind: 'float8 overflow', sql: 'SELECT ?::float8 * ?::float8 AS x', bindings: [1e200, 1e200], error: /value out of range: overflow/ },
  { kind: 'division by zero', sql: 'SELECT 1 / (? - 1) AS x', bindings: [1], error: /division by zero/ },
  { kind: 'unique violation', sql: 'INSERT INTO failing_unique VALUES (?)', bindings: [1], error: /duplicate key value violates unique constraint/ },
  { kind: 'syntax error', sql: 'SELEC 1', bindings: [], error: /syntax error at or near "SELEC"/ },
  { kind: 'PL/pgSQL', sql: 'SELECT failing_plpgsql()', bindings: [], error: /refused by plpgsql/ },
  { kind: 'PostGIS', sql: "SELECT ST_GeomFromText('POINT(bad)')", bindings: [], error: /parse error - invalid geometry/ },
];

describe('failed statements on the database', () => {
  it('leave it answering after 10,000 failures of every kind, in and out of transactions and savepoints', async () => {
    const failures = new Map<string, number>();
    const unexpected: string[] = [];
    const fails = async (run: () => Promise<unknown>, kind: string, error: RegExp) => {
      const err = await run().then(() => null, (e: Error) => e);
      if (err && error.test(err.message)) failures.set(kind, (failures.get(kind) ?? 0) + 1);
      else unexpected.push(`${kind}: ${err?.message ?? 'succeeded'}`);
    };
    let statements = 0;
    let committed = 0;
    for (let round = 0; statements < 10_000; round++) {
      for (const { kind, sql, bindings, error } of KINDS) {
        await fails(() => db.knex.raw(sql, bindings as never[]), kind, error);
        statements++;
      }
      // one inside a transaction, under a savepoint (a nested knex transaction) the transaction survives
      const { kind, sql, bindings, error } = KINDS[round % KINDS.length];
      await db.knex.transaction(async (trx) => {
        await fails(() => trx.transaction((inner) => inner.raw(sql, bindings as never[])), `savepoint: ${kind}`, error);
        await trx.raw('INSERT INTO failing_kept VALUES (?)', [round]);
      });
      statements++;
      committed++;
    }
    expect(unexpected.slice(0, 5)).toEqual([]);
    expect([...failures.values()].reduce((a, b) => a + b, 0)).toBe(statements);
    for (const { kind } of KINDS) expect(failures.get(kind)).toBeGreaterThanOrEqual(1250);
    const { rows } = await db.knex.raw('SELECT 1 + 1 AS two, (SELECT count(*)::int FROM failing_kept) AS kept');
    expect(rows).toEqual([{ two: 2, kept: committed }]);
  }, 120_000);

  it('leaves a PGlite whose internals it does not know as it is, and answers false (the embedded database warns)', () => {
    const run = (m: Uint8Array) => m;
    const other = { mod: { _PostgresMainLongJmp: () => {} }, execProtocolRawSync: run }; // no stack pointer global
    expect(unwindOnError(other as never)).toBe(false);
    expect(other.execProtocolRawSync).toBe(run);
    expect(Object.getOwnPropertyDescriptor(other.mod, '_PostgresMainLongJmp')?.get).toBe(undefined);
  });
});
