import type { Knex } from 'knex';
import { compressByDefault, compressWithLz4 } from './column-compression.js';

/**
 * A message_feed row (db/message-feed.ts) holds a batch's message and device ids, two arrays of ~16 bytes an element,
 * past TOAST's 2 KB threshold once a batch holds a few hundred frames (figures: docs/development/performance.md):
 * - **message ids stored as they are (EXTERNAL: out of line, never compressed)**: pglz tried every batch's ids and
 *   gave up (time-ordered uuids with random tails hardly compress), work for nothing at every insert.
 * - **device ids compressed with lz4** where the server has it (PGlite's build has not): they repeat (a device's
 *   frames of the batch) and compress well; lz4 does as well as pglz for less.
 * Rows already stored keep their form.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE message_feed ALTER COLUMN message_ids SET STORAGE EXTERNAL');
  await compressWithLz4(knex, 'message_feed', 'device_ids');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE message_feed ALTER COLUMN message_ids SET STORAGE EXTENDED');
  await compressByDefault(knex, 'message_feed', 'device_ids');
}
