import type { Knex } from 'knex';
import { createAhead, dropPartitionsBefore, listPartitions, type BeforeDrop, type DroppedPartition } from '../partitions.js';
import { AHEAD_DAYS, MESSAGE_PARTITIONS, RETAINED, TIME_TABLES, type RetentionKind } from './time-tables.js';

/**
 * Retention (docs/operations/retention.md): each kind of append-only data is kept for its number of days (null: kept
 * for ever), and an expiry pass drops the partitions whose whole range is older than that. Whole partitions only: no
 * row-by-row DELETE, so no bloat left behind and no long lock on the table ingest writes to. What the platform
 * derived from the expired rows stays: trips with their statistics and previews, report cards, odometers, trouble-code
 * occurrences, collisions, vehicles, events.
 */

export type RetentionDays = Record<RetentionKind, number | null>;

export interface ExpiryReport {
  /** Partitions made ahead of now. */
  created: string[];
  /** Partitions dropped (or, in a dry run, that would be), oldest first per table. */
  dropped: DroppedPartition[];
  /** Per kind with a retention: rows older than this are expired. */
  cutoffs: Partial<Record<RetentionKind, Date>>;
  dryRun: boolean;
}

const DAY_MS = 86_400_000;

/**
 * A message partition's rows leave the per-device counts with it (the counts' delete trigger does not fire for a
 * dropped table): the counts of its days go (migration 036 keeps them per device and day), and so do the ids from
 * before message ids carried their time (migration 035) that pointed into it. Both by the partition's bounds, through
 * their indexes: nothing reads the partition's rows.
 */
const forgetMessages: BeforeDrop = async (trx, p) => {
  await trx.raw(`DELETE FROM device_message_counts WHERE day >= (?::timestamptz AT TIME ZONE 'UTC')::date
    AND day < (?::timestamptz AT TIME ZONE 'UTC')::date`, [p.from, p.to]);
  await trx.raw('DELETE FROM message_legacy_ids WHERE ts >= ? AND ts < ?', [p.from, p.to]);
};

/** The pass: partitions made ahead, then each kind's expired partitions dropped. Call it with the root knex (not in a transaction). */
export async function expire(knex: Knex, days: RetentionDays, opts: { now?: Date; dryRun?: boolean } = {}): Promise<ExpiryReport> {
  const now = opts.now ?? new Date();
  const dryRun = Boolean(opts.dryRun);
  const created: string[] = [];
  if (!dryRun) for (const spec of TIME_TABLES) created.push(...await createAhead(knex, spec, AHEAD_DAYS, now));
  const dropped: DroppedPartition[] = [];
  const cutoffs: ExpiryReport['cutoffs'] = {};
  for (const kind of Object.keys(RETAINED) as RetentionKind[]) {
    const keep = days[kind];
    if (keep === null || keep === undefined) continue;
    const cutoff = new Date(now.getTime() - keep * DAY_MS);
    cutoffs[kind] = cutoff;
    for (const spec of RETAINED[kind]) {
      dropped.push(...await dropPartitionsBefore(knex, spec, cutoff, {
        dryRun, beforeDrop: spec === MESSAGE_PARTITIONS ? forgetMessages : undefined,
      }));
    }
  }
  return { created, dropped, cutoffs, dryRun };
}

export interface TableStorage {
  table: string;
  /** pg_total_relation_size summed over the partitions: rows, indexes and TOAST. */
  bytes: number;
  partitions: number;
  /** The start of the oldest partition holding rows: nothing older is retained. null: no rows. */
  retainedSince: Date | null;
}

/** Each time-partitioned table's size and the start of its oldest partition with rows (for /metrics and `retention apply`). */
export async function storageOf(knex: Knex): Promise<TableStorage[]> {
  const out: TableStorage[] = [];
  for (const spec of TIME_TABLES) {
    const parts = await listPartitions(knex, spec);
    let retainedSince: Date | null = null;
    for (const p of parts) {
      // oldest first; a partition's first row found through any access path ends the search
      const { rows } = await knex.raw(`SELECT EXISTS (SELECT 1 FROM ${p.name}) AS rows`);
      if (rows[0].rows) { retainedSince = p.from; break; }
    }
    out.push({ table: spec.table, bytes: parts.reduce((n, p) => n + p.bytes, 0), partitions: parts.length, retainedSince });
  }
  return out;
}

/** storageOf as Prometheus text: bytes, partitions and the retained-since time (unix seconds) per table. */
export function storageMetrics(tables: TableStorage[]): string {
  const lines = [
    '# HELP drivewire_table_bytes Bytes of a time-partitioned table: rows, indexes and TOAST of all its partitions.',
    '# TYPE drivewire_table_bytes gauge',
    ...tables.map((t) => `drivewire_table_bytes{table="${t.table}"} ${t.bytes}`),
    '# HELP drivewire_table_partitions Partitions of a time-partitioned table.',
    '# TYPE drivewire_table_partitions gauge',
    ...tables.map((t) => `drivewire_table_partitions{table="${t.table}"} ${t.partitions}`),
    '# HELP drivewire_table_retained_since_seconds Start (unix time) of the oldest partition holding rows; nothing older is kept.',
    '# TYPE drivewire_table_retained_since_seconds gauge',
    ...tables.filter((t) => t.retainedSince).map((t) => `drivewire_table_retained_since_seconds{table="${t.table}"} ${t.retainedSince!.getTime() / 1000}`),
  ];
  return `${lines.join('\n')}\n`;
}
