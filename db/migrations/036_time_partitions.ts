import type { Knex } from 'knex';
import { convertToPartitioned, convertToPlain } from '../partitioned-table.js';
import { runStatements } from '../sql.js';
import { AHEAD_DAYS, TIME_TABLES } from '../retention/time-tables.js';

/**
 * The append-only tables as range partitions by time (db/retention/time-tables.ts), every row kept, so that retention
 * drops whole partitions instead of deleting rows (docs/operations/retention.md):
 * - `messages` by day on `ts`. Its one unique index, (device_id, ts, id), already holds the partition key: it stays
 *   the idempotency key (migration 035).
 * - `transactions` (ts), `dead_letters` (received_at), `notifications` (created_at) and `notification_attempts`
 *   (notified_at) by month. Their primary keys get the time as their last column: unique per id and time, where the
 *   id is random (notifications, transactions) or from a sequence (dead letters), and nothing looks a row up by an
 *   ON CONFLICT on its id.
 * Partitions are made for every span the rows cover and a few days ahead; the platform makes the others as it goes
 * (db/partitions.ts ensurePartitions and createAhead).
 *
 * The per-device message counts (migration 013) are kept per device and UTC day, the span of a message partition:
 * a dropped day's counts go with it (db/retention/expiry.ts), where a single count would need the day's rows counted
 * first. A device's total is the sum of its days.
 */
const COUNTS_BY_DAY = [`
  CREATE OR REPLACE FUNCTION messages_count_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO device_message_counts AS c (device_id, day, n)
      SELECT device_id, (ts AT TIME ZONE 'UTC')::date, count(*) FROM inserted GROUP BY 1, 2 ORDER BY 1, 2
      ON CONFLICT (device_id, day) DO UPDATE SET n = c.n + EXCLUDED.n;
      RETURN NULL;
    END $$`, `
  CREATE OR REPLACE FUNCTION messages_count_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      UPDATE device_message_counts c SET n = c.n - d.n
      FROM (SELECT device_id, (ts AT TIME ZONE 'UTC')::date AS day, count(*) AS n FROM deleted GROUP BY 1, 2 ORDER BY 1, 2) d
      WHERE c.device_id = d.device_id AND c.day = d.day;
      RETURN NULL;
    END $$`];

const COUNTS_TOTAL = [`
  CREATE OR REPLACE FUNCTION messages_count_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO device_message_counts AS c (device_id, n)
      SELECT device_id, count(*) FROM inserted GROUP BY device_id ORDER BY device_id
      ON CONFLICT (device_id) DO UPDATE SET n = c.n + EXCLUDED.n;
      RETURN NULL;
    END $$`, `
  CREATE OR REPLACE FUNCTION messages_count_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      UPDATE device_message_counts c SET n = c.n - d.n
      FROM (SELECT device_id, count(*) AS n FROM deleted GROUP BY device_id ORDER BY device_id) d WHERE c.device_id = d.device_id;
      RETURN NULL;
    END $$`];
export async function up(knex: Knex): Promise<void> {
  // Not analyzed here: an empty partition analyzed looks free to scan whole, and the planner then sorts a device's rows
  // of the others rather than read them in index order (db/connection.ts autoAnalyze analyzes each once it has rows).
  for (const spec of TIME_TABLES) await convertToPartitioned(knex, spec, { widenUniqueKeys: true, aheadDays: AHEAD_DAYS });
  await runStatements(knex, `
    DELETE FROM device_message_counts;
    ALTER TABLE device_message_counts DROP CONSTRAINT device_message_counts_pkey, ADD COLUMN day date NOT NULL;
    ALTER TABLE device_message_counts ADD PRIMARY KEY (device_id, day);
    CREATE INDEX device_message_counts_day ON device_message_counts (day);
    INSERT INTO device_message_counts (device_id, day, n)
      SELECT device_id, (ts AT TIME ZONE 'UTC')::date, count(*) FROM messages GROUP BY 1, 2;
  `);
  for (const f of COUNTS_BY_DAY) await knex.raw(f);
}

/** Back to plain tables, every row kept; the primary keys keep their time column. */
export async function down(knex: Knex): Promise<void> {
  await runStatements(knex, `
    CREATE TEMPORARY TABLE device_totals AS SELECT device_id, sum(n)::bigint AS n FROM device_message_counts GROUP BY 1;
    DROP TABLE device_message_counts;
    CREATE TABLE device_message_counts (device_id uuid PRIMARY KEY REFERENCES devices(id) ON DELETE CASCADE, n bigint NOT NULL);
    INSERT INTO device_message_counts SELECT device_id, n FROM device_totals;
    DROP TABLE device_totals;
  `);
  for (const f of COUNTS_TOTAL) await knex.raw(f);
  for (const spec of [...TIME_TABLES].reverse()) await convertToPlain(knex, spec);
}
