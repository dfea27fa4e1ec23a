import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prepared } from '../../db/prepared.js';
import { createTestDb } from '../helpers/db.js';

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

  it('is a named statement on PostgreSQL, parsed once per connection, and still a knex query event', async () => {
    const seen: string[] = [];
    const onQuery = (q: { sql: string }) => seen.push(q.sql);
    db.knex.on('query', onQuery);
    await db.knex.transaction(async (trx) => {
      await prepared(trx, SQL, [2, [1]]);
      await prepared(trx, SQL, [3, [1]]);
      if (db.kind === 'pg') {
        const { rows } = await trx.raw(`SELECT name, statement FROM pg_prepared_statements WHERE statement = ?`, [
          SQL.replace('?::int', '$1::int').replace('?::int[]', '$2::int[]')]);
        expect(rows).toHaveLength(1);
        expect(rows[0].name).toMatch(/^dw_[0-9a-f]{24}$/);
      }
    });
    db.knex.off('query', onQuery);
    expect(seen.filter((s) => s.includes('AS y FROM unnest('))).toHaveLength(2);
  });

  it('keeps JIT off on PostgreSQL connections (PostGIS costs would JIT-compile millisecond statements)', async () => {
    if (db.kind !== 'pg') return;
    const { rows } = await db.knex.raw(`SELECT current_setting('jit') AS jit`);
    expect(rows[0].jit).toBe('off');
  });
});
