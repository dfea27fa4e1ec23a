import type { Knex } from 'knex';

/**
 * A device's messages in their full order, (ts, id), as every per-device read walks them: the distance step's
 * predecessor and successor (ORDER BY ts, id … LIMIT 1), the API's stream pages (ts DESC, id DESC). On
 * (device_id, ts) alone the planner could not end those at the first row in order: it planned the predecessor
 * lookup as a bitmap scan of the device's whole history and a sort, per new message, which grew with the
 * history. With id in the index, the first entry in index
 * order is the answer, whatever the statistics. It replaces messages_device_ts, whose reads it serves too.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('CREATE INDEX IF NOT EXISTS messages_device_ts_id ON messages (device_id, ts DESC, id DESC)');
  await knex.raw('DROP INDEX IF EXISTS messages_device_ts');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('CREATE INDEX IF NOT EXISTS messages_device_ts ON messages (device_id, ts DESC)');
  await knex.raw('DROP INDEX IF EXISTS messages_device_ts_id');
}
