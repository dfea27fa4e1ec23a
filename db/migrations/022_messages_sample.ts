import type { Knex } from 'knex';

/**
 * ANALYZE of `messages` samples 300 rows per unit of its columns' largest statistics target: with the default (100),
 * 30,000 rows, and the table is analyzed after every tenth of growth (db/connection.ts autoAnalyze), so on a new,
 * growing database those ANALYZEs take a noticeable share of the server's CPU; target 10 (a 3,000-row sample) makes
 * each several times cheaper (docs/development/performance.md). Every statement on the table reads it per device
 * through its indexes (LATERAL … OFFSET 0, forced generic plans), and for `device_id = ?` the planner needs only the
 * number of devices, which 3,000 rows estimate as well. The payload columns have none (migration 012).
 */
const COLUMNS = ['id', 'device_id', 'ts', 'frame_id', 'kind'];

const alter = (knex: Knex, target: number) =>
  knex.raw(`ALTER TABLE messages ${COLUMNS.map((c) => `ALTER COLUMN ${c} SET STATISTICS ${target}`).join(', ')}`);

export async function up(knex: Knex): Promise<void> {
  await alter(knex, 10);
}

export async function down(knex: Knex): Promise<void> {
  await alter(knex, -1);
}
