import type { Knex } from 'knex';

/**
 * The shapes of a rule event's meta (db/rules/rule-event.sql.ts RULE_EVENT_META), as composite types whose attribute
 * names are its keys: `to_jsonb` of one nested row builds the whole meta in one pass and writes it out once. Built from
 * nested `jsonb_build_object` calls, every level wrote its object out as jsonb and the level above read it back in
 * (the message snapshot three times over; docs/development/performance.md).
 */
const TYPES: [name: string, attributes: string][] = [
  ['rule_event_links', 'self text, events text, subscriptions text'],
  ['rule_event_object', 'id uuid, type text'],
  ['rule_event_rule', `id uuid, name text, "deviceId" uuid, boundaries jsonb, evaluated boolean, covered boolean, "createdAt" text,
    object rule_event_object, links rule_event_links`],
  ['rule_event_message', 'id uuid, "timestamp" text, snapshot jsonb'],
  ['rule_event_meta', 'direction text, "firstEval" boolean, rule rule_event_rule, message rule_event_message'],
];

export async function up(knex: Knex): Promise<void> {
  for (const [name, attributes] of TYPES) await knex.raw(`CREATE TYPE ${name} AS (${attributes})`);
}

export async function down(knex: Knex): Promise<void> {
  for (const [name] of [...TYPES].reverse()) await knex.raw(`DROP TYPE IF EXISTS ${name}`);
}
