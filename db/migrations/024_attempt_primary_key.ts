import type { Knex } from 'knex';

/**
 * A recorded attempt is identified by its notification and its number, as they are read (the repository's
 * attempts(), in number order); its own random `id` was written and never read, and that
 * key's index took an insert at a random leaf page for every attempt recorded (docs/development/performance.md). The
 * unique (notification_id, attempt) index becomes the primary key.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE notification_attempts DROP CONSTRAINT IF EXISTS notification_attempts_pkey,
    DROP COLUMN IF EXISTS id`);
  await knex.raw(`ALTER TABLE notification_attempts DROP CONSTRAINT notification_attempts_notification_id_attempt_key,
    ADD PRIMARY KEY (notification_id, attempt)`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE notification_attempts DROP CONSTRAINT notification_attempts_pkey,
    ADD CONSTRAINT notification_attempts_notification_id_attempt_key UNIQUE (notification_id, attempt),
    ADD COLUMN id uuid NOT NULL DEFAULT gen_random_uuid() PRIMARY KEY`);
  await knex.raw('ALTER TABLE notification_attempts ALTER COLUMN id DROP DEFAULT');
}
