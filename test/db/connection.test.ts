import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDb } from '../helpers/db.js';
import { openDatabase } from '../../db/connection.js';

let db: Awaited<ReturnType<typeof createTestDb>>;
beforeAll(async () => { db = await createTestDb(); });
afterAll(async () => { await db?.close(); });

describe('PostgreSQL connection URLs', () => {
  // PostgreSQL only: shown as skipped on the embedded database, not as passed
  it.skipIf(!process.env.TEST_DATABASE_URL)('opens a URL that names its host only in the query, as for a Unix socket (postgres://user@/db?host=…)', async () => {
    const u = new URL(db.url!);
    // the form libpq and pg read, which WHATWG URL refuses (credentials without a host)
    const url = `postgres://${u.username}@/${u.pathname.slice(1)}?host=${u.hostname}&port=${u.port || 5432}`;
    expect(() => new URL(url)).toThrow();
    const other = await openDatabase({ databaseUrl: url });
    try {
      const { rows } = await other.knex.raw('SELECT current_database() AS db, current_user AS who');
      expect(rows[0]).toEqual({ db: u.pathname.slice(1), who: decodeURIComponent(u.username) });
    } finally { await other.close(); }
  });
});
