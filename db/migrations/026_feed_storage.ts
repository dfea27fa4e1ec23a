import type { Knex } from 'knex';
import { compressByDefault, compressWithLz4 } from './column-compression.js';

/**
 * A message_feed row (db/message-feed.ts) holds a batch's message and device ids, two arrays of ~16 bytes an element:
 * ~7 KB each at ~440 frames a batch, past TOAST's 2 KB threshold. Issue 13, replayed under callgrind (200 devices x 2
 * frames a batch):
 * - **message ids stored as they are (EXTERNAL: out of line, never compressed)**: pglz tried every batch's ids and
 *   gave up (time-ordered uuids with random tails: 7,060 bytes stored of 7,064), ~8k of ~291k instructions a frame of
 *   the insert and feed.
 * - **device ids compressed with lz4** where the server has it (PGlite's build has not): they repeat (a device's
 *   frames of the batch), pglz stored 7 KB in ~1 KB; lz4 does as well for less. ~1k more a frame.
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
