import type { Knex } from 'knex';

/**
 * Smaller ANALYZE samples for the other tables that grow with every batch (db/connection.ts autoAnalyze analyzes them
 * after each tenth of growth), as migration 022 did for messages: statistics target 10 (a 3,000-row sample instead
 * of 30,000) on the columns queries find rows by, none (0) on the payloads no query filters, joins or sorts on.
 * Under the rules benchmark the ANALYZEs of these tables, notifications and events above all, were a noticeable share
 * of the server's CPU (docs/development/performance.md). Every query on them reads through an index by key (the
 * notifications' due order, an event's object, a rule's log, a feed number), for which a coarser sample estimates as
 * well. The events' `meta` has none since migration 012.
 */
export const TARGETS: [string, Record<string, number>][] = [
  ['events', { id: 10, device_id: 10, vehicle_id: 10, application_id: 10, ts: 10, stored: 10, event_type: 10, object_type: 10, object_id: 10 }],
  ['notifications', {
    id: 10, event_id: 10, subscription_id: 10, application_id: 10, device_id: 10, url: 10, payload: 0, state: 10, attempts: 10,
    response_code: 10, response: 0, notified_at: 10, responded_at: 10, next_attempt_at: 10, locked_until: 10, created_at: 10,
  }],
  ['notification_attempts', {
    id: 10, notification_id: 10, attempt: 10, outcome: 10, response_code: 10, response: 0, notified_at: 10, responded_at: 10,
  }],
  ['rule_state_log', { rule_id: 10, ts: 10, message_id: 10, states: 0 }],
  ['message_feed', { seq: 10, message_ids: 0, device_ids: 0, committed_at: 10 }],
];

async function alter(knex: Knex, target: (value: number) => number): Promise<void> {
  for (const [table, columns] of TARGETS) {
    await knex.raw(`ALTER TABLE ${table} ${Object.entries(columns)
      .map(([column, value]) => `ALTER COLUMN ${column} SET STATISTICS ${target(value)}`).join(', ')}`);
  }
}

export async function up(knex: Knex): Promise<void> {
  await alter(knex, (value) => value);
}

export async function down(knex: Knex): Promise<void> {
  // back to the default (the events' meta, not listed, keeps migration 012's 0)
  await alter(knex, () => -1);
}
