import fs from 'node:fs';
import path from 'node:path';
import knexFactory, { type Knex } from 'knex';
import pg from 'pg';
import { PGlite } from '@electric-sql/pglite';
import knexPglite from 'knex-pglite';
import { acquireDataDirLock } from './data-dir-lock.js';
import { slimPostgis } from './pglite-postgis.js';
import { installAcquireLimit } from './acquire-limit.js';
import { runOnPglite } from './prepared.js';
import { unwindOnError } from './pglite-stack.js';
import { ArrayParam, plainBinding } from './binary-array.js';
import { maskedDatabaseUrl } from '../lib/database-url.js';
import { embeddedDbDir } from '../lib/config.js';
import { every, type Periodic } from '../lib/periodic.js';

export type { Knex };

export interface Db {
  knex: Knex;
  kind: 'pg' | 'pglite';
  close(): Promise<void>;
}

/**
 * The embedded database behind a knex of openDatabase (undefined on PostgreSQL): for what knex cannot do, such as
 * PGlite's own file system or COPY from a blob.
 */
export const pgliteOf = (knex: Knex): PGlite | undefined => (knex.client as { pglite?: PGlite }).pglite;

// int8 counts and numeric values as JS numbers on both drivers (our counts stay far below 2^53).
const INT8 = 20;
const NUMERIC = 1700;
pg.types.setTypeParser(INT8, (v) => Number(v));
pg.types.setTypeParser(NUMERIC, (v) => Number(v));

/** A query as knex hands it to its client: the fields ClientPGlite reads and sets. */
interface KnexQuery {
  sql?: string; bindings?: unknown[]; method?: string; returning?: unknown; response?: { affectedRows?: number };
  options?: { rowMode?: string; blob?: unknown; name?: string };
}

/** knex-pglite's client class, with the knex client methods ClientPGlite overrides (knex's typings leave them out). */
type PgliteClientClass = new (config: Knex.Config) => {
  _query(connection: PGlite, obj: KnexQuery): Promise<KnexQuery>;
  processResponse(obj: KnexQuery, runner: unknown): unknown;
};

const BaseClientPGlite = ((knexPglite as unknown as { default?: unknown }).default ?? knexPglite) as PgliteClientClass;

/**
 * knex-pglite as the pg driver behaves: a query with a statement name runs as a named statement (db/prepared.ts), its
 * array parameters (db/binary-array.ts) in binary, and a delete answers its affected row count (knex-pglite reports the
 * command as "DEL", so knex returned the raw result).
 */
class ClientPGlite extends BaseClientPGlite {
  /**
   * A query with a statement name (db/prepared.ts) runs as a named statement, as the pg driver does; any other as the
   * unnamed one, through the same steps (runOnPglite). PGlite's own query() is left only what those steps do not
   * do: rows as arrays, and COPY's blobs.
   */
  async _query(connection: PGlite, obj: KnexQuery) {
    if (!obj.sql) throw new Error('The query is empty');
    if (obj.options?.rowMode || obj.options?.blob) {
      // array parameters as plain values: PGlite's query() sends them as text (db/binary-array.ts)
      if (obj.bindings?.some((b: unknown) => b instanceof ArrayParam)) obj.bindings = obj.bindings.map(plainBinding);
      return super._query(connection, obj);
    }
    obj.response = await runOnPglite(connection, obj.options?.name ?? null, obj.sql, obj.bindings ?? []);
    return obj;
  }

  processResponse(obj: KnexQuery, runner: unknown) {
    if (obj?.method === 'del' && !obj.returning) return obj.response?.affectedRows ?? 0;
    return super.processResponse(obj, runner);
  }
}

/**
 * Embedded server settings. PostgreSQL's 128 MB default shared_buffers is touched in the WASM heap and
 * stays resident; one embedded process with one connection does well with 32 MB.
 */
export const PGLITE_CONF = ['shared_buffers=32MB'];

export interface OpenOptions {
  /** A real PostgreSQL with PostGIS; without it the embedded PGlite is used. */
  databaseUrl?: string | null;
  /** PGlite data directory; null or undefined = in memory. */
  pgliteDir?: string | null;
  poolMax?: number;
  /** Hears about a stale data-dir lock taken over (db/data-dir-lock.ts). */
  warn?: (msg: string) => void;
}

/** The PostgreSQL of --database-url / DATABASE_URL cannot be reached or refuses the connection; names the URL and why. */
export class DatabaseUnavailableError extends Error {}

/**
 * knex's own messages, on stderr (knex writes them to stdout, where a command's output goes: a bench's JSON). A
 * connection that could not be made is not one of them: the query waiting for it fails with the reason, and
 * whoever ran it reports it.
 */
const KNEX_LOG = {
  warn: (message: string) => { if (!String(message).startsWith('Acquire connection error')) process.stderr.write(`knex: ${message}\n`); },
  error: (message: string) => process.stderr.write(`knex: ${message}\n`),
  deprecate: (method: string, alternative: string) => process.stderr.write(`knex: ${method} is deprecated, use ${alternative}\n`),
};

/**
 * A pool of its own, of `poolMax` connections, to the database `db` is connected to: for a part whose few short
 * statements must not queue behind the requests of another part in the same process (the gateway's commands and
 * presence behind the API's). On PGlite, which has a single connection, `db` itself (closing it closes nothing).
 */
export function companionPool(db: Db, poolMax: number): Db {
  if (db.kind !== 'pg') return { knex: db.knex, kind: db.kind, close: async () => {} };
  const { pool, ...config } = db.knex.client.config as Knex.Config;
  const knex = knexFactory({ ...config, pool: { ...pool, min: 0, max: poolMax } });
  installAcquireLimit(knex);
  return { knex, kind: 'pg', close: () => knex.destroy() };
}

/**
 * The database a configuration names: PostgreSQL at `databaseUrl`, else the embedded PGlite in `embeddedDbDir(dataDir)`
 * (serve, migrate, credentials rotate).
 */
export function openConfiguredDatabase(config: { databaseUrl: string | null; dataDir: string }, warn?: (message: string) => void): Promise<Db> {
  return openDatabase({ databaseUrl: config.databaseUrl, pgliteDir: embeddedDbDir(config.dataDir), warn });
}

export async function openDatabase(opts: OpenOptions): Promise<Db> {
  if (opts.databaseUrl) {
    const knex = knexFactory({
      log: KNEX_LOG,
      client: 'pg',
      // As pg's own connection string: given a string, knex reads it with WHATWG URL first, which refuses a URL naming
      // its host only in the query (`postgres://user@/db?host=/var/run/postgresql`, a Unix socket); knex then took it
      // for a SQLite file name and pg connected to its defaults.
      connection: { connectionString: opts.databaseUrl },
      pool: {
        min: 0, max: opts.poolMax ?? 10,
        // PostGIS functions carry high planner costs, so PostgreSQL would JIT-compile the ingest path's set-based
        // statements on every batch, taking far longer than the statements, which run in milliseconds. Nothing here is
        // an analytical scan that JIT would speed up: off for every connection, once, at connect.
        afterCreate: (conn: pg.Client, done: (err: Error | null, conn: pg.Client) => void) => {
          conn.query('SET jit = off', (err) => done(err ?? null, conn));
        },
      },
    });
    installAcquireLimit(knex);
    try {
      await knex.raw('select 1');
    } catch (err) {
      await knex.destroy();
      throw new DatabaseUnavailableError(
        `cannot connect to PostgreSQL at ${maskedDatabaseUrl(opts.databaseUrl)}: ${(err as Error).message} (--database-url / DATABASE_URL)`);
    }
    return { knex, kind: 'pg', close: () => knex.destroy() };
  }
  if (opts.pgliteDir) fs.mkdirSync(path.dirname(opts.pgliteDir), { recursive: true });
  const lock = opts.pgliteDir ? acquireDataDirLock(opts.pgliteDir, opts.warn) : null;
  // The data dir goes in the options: `new PGlite(undefined, opts)` drops the extensions (pglite 0.5.8).
  const pglite = new PGlite({
    ...(opts.pgliteDir ? { dataDir: opts.pgliteDir } : {}),
    extensions: { postgis: slimPostgis(opts.warn) },
    postgresqlconf: PGLITE_CONF,
    parsers: { [INT8]: (v: string) => Number(v), [NUMERIC]: (v: string) => Number(v) },
  });
  await pglite.waitReady.catch((err) => { lock?.release(); throw err; });
  // each failed statement would keep its C stack until every statement failed (db/pglite-stack.ts)
  if (!unwindOnError(pglite)) {
    (opts.warn ?? ((m: string) => process.stderr.write(`drivewire: ${m}\n`)))(
      "PGlite's error recovery is not the one db/pglite-stack.ts knows; its C stack is not given back after a failed statement");
  }
  const knex = knexFactory({ log: KNEX_LOG, client: ClientPGlite as unknown as Knex.Config['client'], connection: { pglite } as never, useNullAsDefault: true });
  installAcquireLimit(knex);
  return {
    knex,
    kind: 'pglite',
    close: async () => {
      await knex.destroy();
      if (!pglite.closed) await pglite.close();
      lock?.release();
    },
  };
}

/** Tables that grow with the traffic: analyzed after a tenth of growth and at least 500 rows (PGlite: 1 MB). */
const HOT = ['messages', 'events', 'trips', 'notifications', 'transactions'];
/** Never analyzed here: the extension's and the migrator's own tables. */
const SKIPPED = ['spatial_ref_sys', 'knex_migrations', 'knex_migrations_lock'];

/**
 * PostgreSQL, from its own counters: a hot table once a tenth of it (and 500 rows) changed since its last analysis;
 * another once it has rows, then as it doubles (the rows its last analysis counted: `reltuples`).
 */
const CHANGED_PG = `SELECT s.relname AS t FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid,
    LATERAL (SELECT coalesce((SELECT p.relname FROM pg_inherits i JOIN pg_class p ON p.oid = i.inhparent
      WHERE i.inhrelid = c.oid), s.relname) AS name) o
  WHERE s.schemaname = current_schema() AND (?::text[] IS NULL OR o.name = ANY(?::text[])) AND o.name <> ALL(?::text[])
    AND CASE WHEN o.name = ANY(?::text[]) THEN s.n_live_tup > 0 AND s.n_mod_since_analyze > 500 + 0.1 * greatest(s.n_live_tup, 0)
      ELSE s.n_live_tup > 0 AND s.n_live_tup >= 2 * greatest(c.reltuples, 0) END`;
/** PGlite keeps no such counters (its statistics are never flushed): the tables' sizes, compared with the last analysis. */
const SIZES = `SELECT c.relname AS t, o.name, pg_relation_size(c.oid)::float8 AS bytes FROM pg_class c,
    LATERAL (SELECT coalesce((SELECT p.relname FROM pg_inherits i JOIN pg_class p ON p.oid = i.inhparent
      WHERE i.inhrelid = c.oid), c.relname) AS name) o
  WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'
    AND (?::text[] IS NULL OR o.name = ANY(?::text[])) AND o.name <> ALL(?::text[])`;

/**
 * Analyzes the ingest path's tables as they grow, every few seconds, through the pool. Without fresh statistics a
 * prepared statement's generic plan, made while a table was small, keeps its choice as the table grows:
 * - PGlite has no autovacuum at all, so nothing analyzed and nothing invalidated a cached plan: the distance
 *   statement slowed several times over as `messages` grew. Here: after a tenth (and 1 MB) of growth in size.
 * - PostgreSQL's autovacuum looks once a minute: until then (a fresh deployment, a benchmark) the distance
 *   statement found each message's predecessor by a bitmap scan of the device's whole history. Here: by
 *   autovacuum's own rule on its counters (a tenth of the rows changed), so several processes on one database do not
 *   repeat each other's work.
 * - The small tables the ingest statements join (rules, subscriptions, authorizations, registrations, …) were not
 *   analyzed at all, on PGlite ever, on PostgreSQL for the first minute: the rules statement's notifications found
 *   each authorization through the application's index, filtering out every other device's row. Every table of the
 *   schema is watched now; a small one is analyzed once it has rows (PGlite: a page), then as it doubles. By size,
 *   not by changes: `rule_states` is updated by every batch, and each analysis has every statement that reads the
 *   table planned again, which on PGlite's one connection holds up the batches (analyzed at every tenth of growth
 *   there, the rules bench's commit p99 rose markedly).
 * A time partition (migration 036) is analyzed by its table's rule, once it has rows: an empty one analyzed would look
 * free to read whole. An ANALYZE also makes every cached plan that reads the table be planned again. A refusal (not the owner) is ignored.
 * Started by the processes that ingest or deliver (bin/platform.ts), not by every connection (the CLI, API-only parts).
 */
export function autoAnalyze(knex: Knex, everyMs = 5000, tables: string[] | null = null): Periodic {
  const pglite = knex.client.config.client !== 'pg';
  const analyzedAt = new Map<string, number>();
  const due = async (): Promise<{ t: string; bytes?: number }[]> => {
    if (!pglite) return (await knex.raw(CHANGED_PG, [tables, tables, SKIPPED, HOT])).rows;
    const { rows } = await knex.raw(SIZES, [tables, tables, SKIPPED]);
    return (rows as { t: string; name: string; bytes: number }[]).filter(({ t, name, bytes }) => {
      const last = analyzedAt.get(t) ?? 0;
      return HOT.includes(name) ? bytes >= last * 1.1 && bytes - last >= 1 << 20 : bytes >= Math.max(8192, last * 2);
    });
  };
  return every(everyMs, async (stopped) => {
    for (const { t, bytes } of await due()) {
      if (stopped()) return;
      // One refused (not the owner) or gone table does not keep the others from their turn.
      if (!(await knex.raw('ANALYZE ??', [t]).then(() => true, () => false))) continue;
      if (bytes !== undefined) analyzedAt.set(t, bytes);
    }
  });
}
