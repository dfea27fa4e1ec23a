import type { Knex } from 'knex';

/**
 * The two tables that gain a row per message, `messages` and `distance_steps`, no longer check their device per row.
 * A foreign key checks (and key-share locks) the device row once per inserted row, a noticeable part of each message's
 * insert (docs/development/performance.md). The device is still checked, once per device and statement:
 * every insert of messages upserts the device's row of device_message_counts (migration 013), whose foreign key checks
 * the device when that row is created and whose row lock orders a batch against the device's deletion. Devices are
 * never deleted by the platform (deregistration keeps them); when one is, this trigger deletes its messages and
 * distance steps as the cascade did.
 */
/** The device-deletion trigger's function, deleting the device's rows of `tables` (017 adds its events). */
export const devicesDeleteHistory = (tables: string[]) => `CREATE OR REPLACE FUNCTION devices_delete_history() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
${tables.map((t) => `      DELETE FROM ${t} WHERE device_id = OLD.id;`).join('\n')}
      RETURN OLD;
    END $$`;

/** What this migration's function deletes. */
export const HISTORY_014 = ['distance_steps', 'messages'];

export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE messages DROP CONSTRAINT IF EXISTS messages_device_id_fkey');
  await knex.raw('ALTER TABLE distance_steps DROP CONSTRAINT IF EXISTS distance_steps_device_id_fkey');
  await knex.raw(devicesDeleteHistory(HISTORY_014));
  await knex.raw(`CREATE TRIGGER devices_delete_history BEFORE DELETE ON devices
    FOR EACH ROW EXECUTE FUNCTION devices_delete_history()`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TRIGGER IF EXISTS devices_delete_history ON devices');
  await knex.raw('DROP FUNCTION IF EXISTS devices_delete_history()');
  await knex.raw('ALTER TABLE messages ADD CONSTRAINT messages_device_id_fkey FOREIGN KEY (device_id) REFERENCES devices(id) ON DELETE CASCADE');
  await knex.raw('ALTER TABLE distance_steps ADD CONSTRAINT distance_steps_device_id_fkey FOREIGN KEY (device_id) REFERENCES devices(id) ON DELETE CASCADE');
}
