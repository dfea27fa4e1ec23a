import type { Knex } from 'knex';

/**
 * Each device's number of stored messages, kept by statement-level triggers on messages (every insert path: the
 * ingest batch, fixtures, seeds; deletes, a device's deletion included). A stream page of a device's messages
 * without `since` reports `remaining` as this total less the messages newer than its `prior` link, which for the
 * first pages is a handful of index entries: the capped count of the older ones read up to 10,000 index entries,
 * nearly all of the API's work per page. One upsert per device per statement, in device order
 * (two gateways' batches lock the rows in one order). Messages are never updated.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`CREATE TABLE IF NOT EXISTS device_message_counts (
    device_id uuid PRIMARY KEY REFERENCES devices(id) ON DELETE CASCADE,
    n bigint NOT NULL)`);
  await knex.raw(`INSERT INTO device_message_counts (device_id, n)
    SELECT device_id, count(*) FROM messages GROUP BY device_id ON CONFLICT (device_id) DO UPDATE SET n = EXCLUDED.n`);
  await knex.raw(`CREATE OR REPLACE FUNCTION messages_count_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO device_message_counts AS c (device_id, n)
      SELECT device_id, count(*) FROM inserted GROUP BY device_id ORDER BY device_id
      ON CONFLICT (device_id) DO UPDATE SET n = c.n + EXCLUDED.n;
      RETURN NULL;
    END $$`);
  await knex.raw(`CREATE OR REPLACE FUNCTION messages_count_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      UPDATE device_message_counts c SET n = c.n - d.n
      FROM (SELECT device_id, count(*) AS n FROM deleted GROUP BY device_id ORDER BY device_id) d WHERE c.device_id = d.device_id;
      RETURN NULL;
    END $$`);
  await knex.raw(`CREATE TRIGGER messages_count_inserted AFTER INSERT ON messages REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT EXECUTE FUNCTION messages_count_inserted()`);
  await knex.raw(`CREATE TRIGGER messages_count_deleted AFTER DELETE ON messages REFERENCING OLD TABLE AS deleted
    FOR EACH STATEMENT EXECUTE FUNCTION messages_count_deleted()`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TRIGGER IF EXISTS messages_count_inserted ON messages');
  await knex.raw('DROP TRIGGER IF EXISTS messages_count_deleted ON messages');
  await knex.raw('DROP FUNCTION IF EXISTS messages_count_inserted()');
  await knex.raw('DROP FUNCTION IF EXISTS messages_count_deleted()');
  await knex.raw('DROP TABLE IF EXISTS device_message_counts');
}
