import type { Knex } from 'knex';

/**
 * No planner statistics for the payload columns no query filters, joins or sorts on: the messages' `data` and
 * `extra` (jsonb), `location` and `received_at`, the events' `meta`. ANALYZE spent most of its time sampling and
 * comparing those jsonb values, and the hot tables are analyzed every 10% of growth (db/connection.ts autoAnalyze):
 * on PostgreSQL, ANALYZE messages at 63,000 rows went from 720–770 ms to 110–125 ms, and in a 15 s ingest benchmark
 * the four ANALYZEs of a growing table had cost 3.1 s of the server's 14.3 CPU-seconds (issue 13). The columns
 * every query reads through (id, device_id, ts, frame_id, kind; the events' keys) keep theirs.
 */
const COLUMNS: [string, string[]][] = [
  ['messages', ['data', 'extra', 'location', 'received_at']],
  ['events', ['meta']],
];

async function alter(knex: Knex, target: number): Promise<void> {
  for (const [table, cols] of COLUMNS) {
    await knex.raw(`ALTER TABLE ${table} ${cols.map((c) => `ALTER COLUMN ${c} SET STATISTICS ${target}`).join(', ')}`);
  }
}

export async function up(knex: Knex): Promise<void> {
  await alter(knex, 0);
}

export async function down(knex: Knex): Promise<void> {
  await alter(knex, -1);
}
