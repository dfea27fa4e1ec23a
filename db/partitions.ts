import type { Knex } from 'knex';
import type pg from 'pg';

/**
 * The platform's own partition manager: range partitions of one span (a day, a month) on a timestamptz column, made
 * ahead of time and on demand, listed with their sizes, dropped whole once older than a cutoff. pg_partman does the
 * same on PostgreSQL but is not in PGlite; one manager on both keeps one behaviour and one test suite
 * (docs/operations/postgresql.md#time-partitions).
 *
 * There is no DEFAULT partition: a row without its partition is refused, and the ingest path makes the partition
 * first (ensurePartitions). With a default partition, adding a partition whose range overlaps rows already in it would
 * scan (and move) them under a lock that holds up ingest, and DETACH … CONCURRENTLY is refused on such a table.
 */

export type Span = 'day' | 'month';

/** A partitioned table: partitions of `span` on `column`. Names are the code's own, never input. */
export interface PartitionedTable {
  table: string;
  column: string;
  span: Span;
  /** Storage parameters of every partition (a partitioned table has none of its own), e.g. `fillfactor = 50`. */
  storage?: string;
}

export interface Partition {
  name: string;
  /** Lower bound, inclusive. */
  from: Date;
  /** Upper bound, exclusive. */
  to: Date;
  /** pg_total_relation_size: the table, its indexes and TOAST. */
  bytes: number;
  /** The planner's row estimate (reltuples); -1 while the partition was never analyzed. */
  rowsEstimate: number;
  /** A DETACH … CONCURRENTLY that did not finish (PostgreSQL): finalized by the next drop. */
  detachPending: boolean;
}

export interface DroppedPartition {
  table: string;
  name: string;
  from: Date;
  to: Date;
  bytes: number;
  /** The planner's estimate where the partition was analyzed, else counted. */
  rows: number;
}

const DAY_MS = 86_400_000;
/** Creating more partitions than this in one call is a mistake (a timestamp decades away), not a need. */
export const MAX_PARTITIONS_PER_CALL = 4000;
/** How long a partition's DDL may wait for a lock on PostgreSQL before it gives way and tries again. */
const LOCK_TIMEOUT_MS = 50;
const LOCK_RETRIES = 60;

const IDENTIFIER = /^[a-z_][a-z0-9_]*$/;

function checked(spec: PartitionedTable): PartitionedTable {
  for (const name of [spec.table, spec.column]) {
    if (!IDENTIFIER.test(name)) throw new Error(`Not a plain identifier: ${JSON.stringify(name)}`);
  }
  if (spec.storage !== undefined && !/^[a-z_]+ *= *[0-9a-z_.]+( *, *[a-z_]+ *= *[0-9a-z_.]+)*$/.test(spec.storage)) {
    throw new Error(`Not a storage parameter list: ${JSON.stringify(spec.storage)}`);
  }
  return spec;
}

/** The start (UTC) of the span holding `t`. */
export function spanStart(span: Span, t: Date | number): Date {
  const d = new Date(t);
  if (span === 'day') return new Date(Math.floor(d.getTime() / DAY_MS) * DAY_MS);
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1));
}

/** The start of the span after the one starting at `start`. */
export function nextSpan(span: Span, start: Date): Date {
  if (span === 'day') return new Date(start.getTime() + DAY_MS);
  return new Date(Date.UTC(start.getUTCFullYear(), start.getUTCMonth() + 1, 1));
}

/** `transactions_p20261207` (a day), `transactions_p202612` (a month). */
export function partitionName(spec: PartitionedTable, start: Date): string {
  const iso = start.toISOString();
  const stamp = spec.span === 'day' ? iso.slice(0, 10).replaceAll('-', '') : iso.slice(0, 7).replace('-', '');
  return `${spec.table}_p${stamp}`;
}

const isTransaction = (knex: Knex): boolean => Boolean((knex as Knex & { isTransaction?: boolean }).isTransaction);
const onPostgres = (knex: Knex): boolean => knex.client.config.client === 'pg';
const literal = (d: Date): string => `'${d.toISOString()}'`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const codeOf = (err: unknown): string | undefined => (err as { code?: string }).code;

/**
 * The partitions each knex instance knows to exist, by table: span starts in ms. Filled from the catalog and by what
 * this process made; a partition another process dropped is forgotten by forgetPartitions.
 */
const known = new WeakMap<object, Map<string, Set<number>>>();

/** The cache of the database behind `knex` (a transaction shares its root's). */
function knownOf(knex: Knex, table: string): Set<number> {
  const root = (knex.client as object);
  let tables = known.get(root);
  if (!tables) known.set(root, tables = new Map());
  let starts = tables.get(table);
  if (!starts) tables.set(table, starts = new Set());
  return starts;
}

/** Forgets what this process knows of `table`'s partitions: the next ensurePartitions reads the catalog again. */
export function forgetPartitions(knex: Knex, table: string): void {
  knownOf(knex, table).clear();
}

/** `table`'s partitions with their bounds and sizes, oldest first. Ranges not of this manager (MINVALUE…) are left out. */
export async function listPartitions(knex: Knex, spec: PartitionedTable): Promise<Partition[]> {
  const { table } = checked(spec);
  const { rows } = await knex.raw(`
    SELECT c.relname AS name, b.bounds[1]::timestamptz AS "from", b.bounds[2]::timestamptz AS "to",
      pg_total_relation_size(c.oid)::float8 AS bytes, c.reltuples::float8 AS rows, i.inhdetachpending AS pending
    FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid,
      LATERAL (SELECT regexp_match(pg_get_expr(c.relpartbound, c.oid),
        'FROM \\(''([^'']+)''\\) TO \\(''([^'']+)''\\)') AS bounds) b
    WHERE i.inhparent = to_regclass(?) AND b.bounds IS NOT NULL
    ORDER BY 2`, [table]);
  return (rows as { name: string; from: Date; to: Date; bytes: number; rows: number; pending: boolean }[])
    .map((r) => ({ name: r.name, from: new Date(r.from), to: new Date(r.to), bytes: r.bytes, rowsEstimate: r.rows, detachPending: r.pending }));
}

/**
 * Runs `ddl` in its own transaction that waits at most LOCK_TIMEOUT_MS for each lock, and tries again after a pause
 * while a lock was not granted: a waiting DDL queues every later statement on the table behind it, ingest included,
 * so it gives way instead. Inside a caller's transaction (a migration) it runs there, as the caller's locks decide.
 */
async function withShortLocks(knex: Knex, ddl: (trx: Knex) => Promise<void>): Promise<void> {
  if (isTransaction(knex) || !onPostgres(knex)) {
    await (isTransaction(knex) ? ddl(knex) : knex.transaction(ddl));
    return;
  }
  for (let attempt = 0; ; attempt++) {
    try {
      await knex.transaction(async (trx) => {
        await trx.raw(`SET LOCAL lock_timeout = '${LOCK_TIMEOUT_MS}ms'`);
        await ddl(trx);
      });
      return;
    } catch (err) {
      if (codeOf(err) !== '55P03' || attempt >= LOCK_RETRIES) throw err;
      await sleep(20 + Math.random() * 80);
    }
  }
}

/**
 * Makes one partition: a table like the parent (columns, defaults, checks, compression), the parent's column
 * statistics targets, then ATTACH. ATTACH takes SHARE UPDATE EXCLUSIVE on the parent, which inserts, updates and
 * reads do not wait for, where CREATE TABLE … PARTITION OF takes ACCESS EXCLUSIVE. The new table is empty, so
 * attaching it scans nothing.
 */
async function createPartition(knex: Knex, spec: PartitionedTable, from: Date, to: Date): Promise<void> {
  const name = partitionName(spec, from);
  await withShortLocks(knex, async (trx) => {
    await trx.raw(`CREATE TABLE IF NOT EXISTS ${name} (LIKE ${spec.table} INCLUDING DEFAULTS INCLUDING GENERATED
      INCLUDING CONSTRAINTS INCLUDING STORAGE INCLUDING COMPRESSION)${spec.storage ? ` WITH (${spec.storage})` : ''}`);
    const { rows } = await trx.raw(`SELECT attname, attstattarget FROM pg_attribute
      WHERE attrelid = ?::regclass AND attnum > 0 AND NOT attisdropped AND attstattarget >= 0`, [spec.table]);
    const targets = (rows as { attname: string; attstattarget: number }[])
      .map((r) => `ALTER COLUMN "${r.attname}" SET STATISTICS ${Number(r.attstattarget)}`);
    if (targets.length) await trx.raw(`ALTER TABLE ${name} ${targets.join(', ')}`);
    await trx.raw(`ALTER TABLE ${spec.table} ATTACH PARTITION ${name} FOR VALUES FROM (${literal(from)}) TO (${literal(to)})`);
  });
}

/** Whether `table` has a partition of exactly [from, to) (another process may have made it). */
async function hasPartition(knex: Knex, spec: PartitionedTable, from: Date, to: Date): Promise<boolean> {
  return (await listPartitions(knex, spec)).some((p) => p.from.getTime() === from.getTime() && p.to.getTime() === to.getTime());
}

/** Span starts from the one holding `from` to the one holding `to`. */
function spansCovering(span: Span, from: Date, to: Date): Date[] {
  const starts: Date[] = [];
  for (let s = spanStart(span, from); s.getTime() <= to.getTime(); s = nextSpan(span, s)) {
    if (starts.length >= MAX_PARTITIONS_PER_CALL) {
      throw new RangeError(`More than ${MAX_PARTITIONS_PER_CALL} partitions from ${from.toISOString()} to ${to.toISOString()}`);
    }
    starts.push(s);
  }
  return starts;
}

/**
 * Makes the partitions covering [from, to] that do not exist yet; returns the names it made. Idempotent, and safe
 * while another process makes the same ones: a partition it finds made meanwhile counts as made.
 */
export async function createPartitions(knex: Knex, spec: PartitionedTable, from: Date, to: Date): Promise<string[]> {
  checked(spec);
  const existing = new Set((await listPartitions(knex, spec)).map((p) => p.from.getTime()));
  const made: string[] = [];
  const cache = knownOf(knex, spec.table);
  for (const start of spansCovering(spec.span, from, to)) {
    if (existing.has(start.getTime())) { if (!isTransaction(knex)) cache.add(start.getTime()); continue; }
    const end = nextSpan(spec.span, start);
    try {
      await createPartition(knex, spec, start, end);
      made.push(partitionName(spec, start));
    } catch (err) {
      // made by another process between our look and our DDL: duplicate name or type, already attached, overlap
      if (isTransaction(knex) || !(await hasPartition(knex, spec, start, end))) throw err;
    }
    remember(knex, cache, start.getTime());
  }
  return made;
}

/** Caches a span start once it is committed: at once outside a transaction, on commit inside one. */
function remember(knex: Knex, cache: Set<number>, start: number): void {
  if (!isTransaction(knex)) { cache.add(start); return; }
  const done = (knex as Knex.Transaction).executionPromise;
  done?.then(() => cache.add(start), () => undefined);
}

/**
 * Makes sure a partition exists for each of `times` (the ingest path, before it stores rows of those times, late
 * ones included). Costs no query when every span is known to this process.
 */
export async function ensurePartitions(knex: Knex, spec: PartitionedTable, times: Iterable<Date | number>): Promise<void> {
  const cache = knownOf(knex, spec.table);
  const missing = new Set<number>();
  // the span last looked up, [lo, hi): a batch's times are nearly all in one, which then costs a comparison each
  let lo = 0;
  let hi = 0;
  for (const t of times) {
    const ms = typeof t === 'number' ? t : t.getTime();
    if (ms >= lo && ms < hi) continue;
    const start = spanStart(spec.span, ms);
    if (Number.isNaN(start.getTime())) throw new RangeError('Not a time');
    lo = start.getTime();
    hi = nextSpan(spec.span, start).getTime();
    if (!cache.has(lo)) missing.add(lo);
  }
  if (missing.size === 0) return;
  if (missing.size > MAX_PARTITIONS_PER_CALL) throw new RangeError(`More than ${MAX_PARTITIONS_PER_CALL} partitions at once`);
  const sorted = [...missing].sort((a, b) => a - b);
  const existing = new Set((await listPartitions(knex, spec)).map((p) => p.from.getTime()));
  for (const start of sorted) {
    if (existing.has(start)) { remember(knex, cache, start); continue; }
    await createPartitions(knex, spec, new Date(start), new Date(start));
  }
}

/** The partitions from the span holding `now` to `days` days ahead. */
export function createAhead(knex: Knex, spec: PartitionedTable, days: number, now = new Date()): Promise<string[]> {
  return createPartitions(knex, spec, now, new Date(now.getTime() + days * DAY_MS));
}

/** Rows of a partition for a report: the planner's estimate where there is one, else a count (a drop's last read). */
async function rowsOf(knex: Knex, p: Partition): Promise<number> {
  if (p.rowsEstimate >= 0) return Math.round(p.rowsEstimate);
  const { rows } = await knex.raw(`SELECT count(*)::float8 AS n FROM ${p.name}`);
  return rows[0].n;
}

/**
 * Drops one table that is no partition any more, giving way to other lockers (its foreign keys lock their tables);
 * `before` runs first in the same transaction (what the table's rows leave behind elsewhere: counts), so the two
 * happen together or not at all.
 */
async function dropDetached(knex: Knex, p: Partition, before?: BeforeDrop): Promise<void> {
  await withShortLocks(knex, async (trx) => {
    if (before && (await trx.raw('SELECT to_regclass(?) IS NOT NULL AS present', [p.name])).rows[0].present) await before(trx, p);
    await trx.raw(`DROP TABLE IF EXISTS ${p.name}`);
  });
}

/** Runs in the transaction that drops a partition, before the DROP (on PostgreSQL the partition is detached by then). */
export type BeforeDrop = (trx: Knex, partition: Partition) => Promise<void>;

/**
 * DETACH … CONCURRENTLY (PostgreSQL): the partition leaves the table without a lock that holds up its readers and
 * writers. It cannot run in a transaction, so it runs on one connection of its own; an unfinished one (the process
 * died between its two steps) is finished with FINALIZE.
 */
async function detachConcurrently(knex: Knex, spec: PartitionedTable, p: Partition): Promise<void> {
  const how = p.detachPending ? 'FINALIZE' : 'CONCURRENTLY';
  const conn = (await knex.client.acquireConnection()) as pg.Client;
  try {
    await conn.query(`ALTER TABLE ${spec.table} DETACH PARTITION ${p.name} ${how}`);
  } finally {
    await knex.client.releaseConnection(conn);
  }
}

/**
 * Drops `table`'s partitions whose whole range ends at or before `cutoff`, oldest first, and returns them. On
 * PostgreSQL each is detached concurrently, then dropped (no transaction: call it with the root knex); on PGlite
 * (one connection, nobody to wait for) dropped at once. `dryRun`: returns what would be dropped, drops nothing;
 * `beforeDrop`: see BeforeDrop.
 */
export async function dropPartitionsBefore(
  knex: Knex, spec: PartitionedTable, cutoff: Date, opts: { dryRun?: boolean; beforeDrop?: BeforeDrop } = {},
): Promise<DroppedPartition[]> {
  checked(spec);
  if (isTransaction(knex) && onPostgres(knex) && !opts.dryRun) throw new Error('Partitions are detached outside a transaction');
  const dropped: DroppedPartition[] = [];
  const cache = knownOf(knex, spec.table);
  for (const p of await listPartitions(knex, spec)) {
    if (p.to.getTime() > cutoff.getTime()) continue;
    const entry: DroppedPartition = { table: spec.table, name: p.name, from: p.from, to: p.to, bytes: p.bytes, rows: await rowsOf(knex, p) };
    if (!opts.dryRun) {
      cache.delete(p.from.getTime());
      if (onPostgres(knex)) {
        await detachConcurrently(knex, spec, p).catch(async (err) => {
          // another process's expiry detached it meanwhile: what is left is to drop it
          if ((await listPartitions(knex, spec)).some((q) => q.name === p.name)) throw err;
        });
      }
      await dropDetached(knex, p, opts.beforeDrop);
    }
    dropped.push(entry);
  }
  return dropped;
}
