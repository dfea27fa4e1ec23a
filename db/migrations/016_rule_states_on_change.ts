import type { Knex } from 'knex';

/**
 * rule_states is written when a rule's state changes, not by every batch of its device: written by every
 * batch, a batch's rules were a row update each, nearly all of them only moving `last_ts`.
 * Whether a batch is late, which `last_ts` told per rule, is now told per device by its newest stored timestamp
 * (db/rules/evaluate.ts), so the two columns that only moved with every batch go.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE rule_states DROP COLUMN IF EXISTS last_ts, DROP COLUMN IF EXISTS last_message_id');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE rule_states ADD COLUMN IF NOT EXISTS last_ts timestamptz, ADD COLUMN IF NOT EXISTS last_message_id uuid');
}
