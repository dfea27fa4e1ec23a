import type { Knex } from 'knex';
import { compressByDefault, compressWithLz4 } from './column-compression.js';

/**
 * The delivery queue's rows are written three times: stored with their event, leased by a claim (`locked_until`),
 * then recorded (state, payload, next_attempt_at). The storage follows (figures: docs/development/performance.md):
 * - **fillfactor 50**: a row is over a kilobyte once its payload is stored, so a full page had no room for a claimed
 *   row's new version and the claim moved nearly every row to another page with a new entry in each of the table's
 *   four indexes. With half of each page left free at insert, a claim changes no indexed column and stays on its
 *   page (a HOT update). The record changes `next_attempt_at`, which the
 *   due index holds, so it cannot be HOT either way.
 * - **payload compressed with lz4** where the server has it (PGlite's build has not): the body posted is stored with
 *   the first attempt and usually passes TOAST's 2 KB threshold, so pglz compressed nearly every one, and lz4 is
 *   cheaper. Values already stored keep their method; a value is decompressed the same way either way.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE notifications SET (fillfactor = 50)');
  await compressWithLz4(knex, 'notifications', 'payload');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE notifications RESET (fillfactor)');
  await compressByDefault(knex, 'notifications', 'payload');
}
