import type { Knex } from 'knex';

/**
 * A rule's boundaries as its copy presents them, stored with the rule (db/rules/rule-event.sql.ts BOUNDARIES_OF): every
 * rule event's meta carries them, and rules are immutable, so they are built once, when the rule is created
 * (rules.repository.ts), not for every event. Built for every event (an index scan of the rule's boundaries, an object
 * each and their aggregate), they were a noticeable part of the rules' work (docs/development/performance.md). Existing
 * rules get theirs in migration 038, which builds them with every boundary field it adds; a rule stored without one
 * (by an older gateway during an upgrade) has its boundaries built at each event, as before.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE rules ADD COLUMN IF NOT EXISTS boundaries jsonb');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE rules DROP COLUMN IF EXISTS boundaries');
}
