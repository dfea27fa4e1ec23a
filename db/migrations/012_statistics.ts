import type { Knex } from 'knex';

/**
 * No planner statistics for the payload columns no query filters, joins or sorts on: the messages' `data` and
 * `extra` (jsonb), `location` and `received_at`, the events' `meta`. ANALYZE spent most of its time sampling and
 * comparing those jsonb values, and the hot tables are analyzed every 10% of growth (db/connection.ts autoAnalyze), so
 * under ingest those ANALYZEs were a sizeable share of the server's CPU (docs/development/performance.md). The columns
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
