import type { Knex } from 'knex';

/**
 * The delivery queue's claim (db/repositories/notifications.repository.ts CLAIM) takes the due notifications in
 * (next_attempt_at, id) order. Indexed on next_attempt_at alone, every claim sorted every due row to find the first
 * few, so delivery slowed as the backlog grew.
 * In the claim's full order, a claim reads only the rows it takes, plus those leased by calls in flight.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`CREATE INDEX IF NOT EXISTS notifications_due_order ON notifications (next_attempt_at, id)
    WHERE next_attempt_at IS NOT NULL`);
  await knex.raw('DROP INDEX IF EXISTS notifications_due');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('CREATE INDEX IF NOT EXISTS notifications_due ON notifications (next_attempt_at) WHERE next_attempt_at IS NOT NULL');
  await knex.raw('DROP INDEX IF EXISTS notifications_due_order');
}
