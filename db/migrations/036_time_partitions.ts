import type { Knex } from 'knex';
import { convertToPartitioned, convertToPlain } from '../partitioned-table.js';
import { AHEAD_DAYS, TIME_TABLES } from '../retention/time-tables.js';

/**
 * The append-only tables as range partitions by time (db/retention/time-tables.ts), every row kept, so that retention
 * drops whole partitions instead of deleting rows (docs/operations/postgresql.md#time-partitions):
 * - `messages` by day on `ts`. Its one unique index, (device_id, ts, id), already holds the partition key: it stays
 *   the idempotency key (migration 035).
 * - `transactions` (ts), `dead_letters` (received_at), `notifications` (created_at) and `notification_attempts`
 *   (notified_at) by month. Their primary keys get the time as their last column: unique per id and time, where the
 *   id is random (notifications, transactions) or from a sequence (dead letters), and nothing looks a row up by an
 *   ON CONFLICT on its id.
 * Partitions are made for every span the rows cover and a few days ahead; the platform makes the others as it goes
 * (db/partitions.ts ensurePartitions and createAhead).
 */
export async function up(knex: Knex): Promise<void> {
  // Not analyzed here: an empty partition analyzed looks free to scan whole, and the planner then sorts a device's rows
  // of the others rather than read them in index order (db/connection.ts autoAnalyze analyzes each once it has rows).
  for (const spec of TIME_TABLES) await convertToPartitioned(knex, spec, { widenUniqueKeys: true, aheadDays: AHEAD_DAYS });
}

/** Back to plain tables, every row kept; the primary keys keep their time column. */
export async function down(knex: Knex): Promise<void> {
  for (const spec of [...TIME_TABLES].reverse()) await convertToPlain(knex, spec);
}
