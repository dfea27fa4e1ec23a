import fs from 'node:fs';
import path from 'node:path';
import knexFactory, { type Knex } from 'knex';
import pg from 'pg';
import { PGlite } from '@electric-sql/pglite';
import knexPglite from 'knex-pglite';
import { acquireDataDirLock } from './data-dir-lock.js';
import { slimPostgis } from './pglite-postgis.js';
import { installAcquireLimit } from './acquire-limit.js';

export type { Knex };

export interface Db {
  knex: Knex;
  kind: 'pg' | 'pglite';
  close(): Promise<void>;
}

// int8 counts and numeric values as JS numbers on both drivers (our counts stay far below 2^53).
const INT8 = 20;
const NUMERIC = 1700;
pg.types.setTypeParser(INT8, (v) => Number(v));
pg.types.setTypeParser(NUMERIC, (v) => Number(v));

const BaseClientPGlite = ((knexPglite as unknown as { default?: unknown }).default ?? knexPglite) as any;

/**
 * knex-pglite reports a delete as command "DEL", so knex returns the raw result instead of the
 * affected row count that the pg driver gives; answer the count like pg does.
 */
class ClientPGlite extends BaseClientPGlite {
  processResponse(obj: any, runner: unknown) {
    if (obj?.method === 'del' && !obj.returning) return obj.response?.affectedRows ?? 0;
    return super.processResponse(obj, runner);
  }
}

/**
 * Embedded server settings. PostgreSQL's 128 MB default shared_buffers is touched in the WASM heap and
 * stays resident (+120 MB RSS); one embedded process with one connection does well with 32 MB.
 */
const PGLITE_CONF = ['shared_buffers=32MB'];

export interface OpenOptions {
  /** A real PostgreSQL with PostGIS; without it the embedded PGlite is used. */
  databaseUrl?: string | null;
  /** PGlite data directory; null or undefined with no loadDataDir = in memory. */
  pgliteDir?: string | null;
  /** A PGlite data-dir dump to start from (tests clone one migrated template). */
  loadDataDir?: Blob | File;
  poolMax?: number;
  /** Hears about a stale data-dir lock taken over (db/data-dir-lock.ts). */
  warn?: (msg: string) => void;
}

export async function openDatabase(opts: OpenOptions): Promise<Db> {
  if (opts.databaseUrl) {
    const knex = knexFactory({
      client: 'pg',
      connection: opts.databaseUrl,
      pool: {
        min: 0, max: opts.poolMax ?? 10,
        // PostGIS functions carry high planner costs, so PostgreSQL would JIT-compile the ingest path's set-based
        // statements on every batch (~1.5 s measured, for statements that run in milliseconds). Nothing here is
        // an analytical scan that JIT would speed up: off for every connection, once, at connect.
        afterCreate: (conn: pg.Client, done: (err: Error | null, conn: pg.Client) => void) => {
          conn.query('SET jit = off', (err) => done(err ?? null, conn));
        },
      },
    });
    installAcquireLimit(knex);
    await knex.raw('select 1');
    return { knex, kind: 'pg', close: () => knex.destroy() };
  }
  if (opts.pgliteDir) fs.mkdirSync(path.dirname(opts.pgliteDir), { recursive: true });
  const lock = opts.pgliteDir ? acquireDataDirLock(opts.pgliteDir, opts.warn) : null;
  // The data dir goes in the options: `new PGlite(undefined, opts)` drops the extensions (pglite 0.5.8).
  const pglite = new PGlite({
    ...(opts.pgliteDir ? { dataDir: opts.pgliteDir } : {}),
    ...(opts.loadDataDir ? { loadDataDir: opts.loadDataDir } : {}),
    extensions: { postgis: slimPostgis(opts.warn) },
    postgresqlconf: PGLITE_CONF,
    parsers: { [INT8]: (v: string) => Number(v), [NUMERIC]: (v: string) => Number(v) },
  });
  await pglite.waitReady.catch((err) => { lock?.release(); throw err; });
  const knex = knexFactory({ client: ClientPGlite as unknown as Knex.Config['client'], connection: { pglite } as never, useNullAsDefault: true });
  installAcquireLimit(knex);
  const analyzer = autoAnalyze(knex);
  return {
    knex,
    kind: 'pglite',
    close: async () => {
      analyzer.stop();
      await knex.destroy();
      if (!pglite.closed) await pglite.close();
      lock?.release();
    },
  };
}

/** Dumps a PGlite database (used to clone the migrated test template). */
export async function dumpPglite(db: Db): Promise<Blob> {
  const conn = (await db.knex.client.acquireConnection()) as PGlite;
  try {
    return await conn.dumpDataDir('none');
  } finally {
    await db.knex.client.releaseConnection(conn);
  }
}

/** Tables whose size the ingest path's plans depend on. */
const ANALYZED = ['messages', 'events', 'trips', 'distance_steps', 'notifications', 'transactions'];

/**
 * PGlite has no autovacuum, so nothing ever analyzes its tables and nothing invalidates a cached plan: a prepared
 * statement's generic plan made while `messages` was empty kept scanning it as it grew (db/prepared.ts). Like
 * autovacuum's autoanalyze, this analyzes a table once it has grown by a tenth (and 1 MB) since its last analysis,
 * which also makes every cached plan that reads it be planned again. Checked every few seconds, through the pool.
 */
export function autoAnalyze(knex: Knex, everyMs = 5000, tables = ANALYZED): { stop(): void } {
  const analyzedAt = new Map<string, number>();
  let busy = false;
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    void (async () => {
      const { rows } = await knex.raw(`SELECT t, pg_relation_size(t::regclass)::float8 AS bytes FROM unnest(?::text[]) AS t WHERE to_regclass(t) IS NOT NULL`, [tables]);
      for (const { t, bytes } of rows as { t: string; bytes: number }[]) {
        const last = analyzedAt.get(t) ?? 0;
        if (bytes < last * 1.1 || bytes - last < 1 << 20) continue;
        await knex.raw(`ANALYZE ${t}`);
        analyzedAt.set(t, bytes);
      }
    })().catch(() => undefined).finally(() => { busy = false; });
  }, everyMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
