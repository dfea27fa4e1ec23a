import type { Knex } from 'knex';

/**
 * The GiST index on `messages.location` served no query: rules test the batch's own rows against their
 * boundaries, trips and distance read a device's track through (device_id, ts). Maintaining it cost
 * a large share of the insert rate (docs/development/performance.md). Every index left on `messages`
 * has a query that needs it: (device_id, ts) for every per-device read, the partial unique
 * (device_id, frame_id) for de-duplicating re-sent frames.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS messages_location');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('CREATE INDEX IF NOT EXISTS messages_location ON messages USING gist (location)');
}
