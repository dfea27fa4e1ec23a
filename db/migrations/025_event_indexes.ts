import type { Knex } from 'knex';

/**
 * The events' secondary indexes, each kept for a query that reads it (every event a batch stores inserts
 * into all of them, and rules can make an event of every few frames).
 * - `events_object` (object_id) and `events_rule_ts` (object_id, ts) WHERE object_type = 'rule' become one
 *   `events_object_ts` (object_id, ts): a rule's events from a timestamp on (db/rules/evaluate.sql.ts `stored`, a late
 *   frame's recomputation), a trip's events (db/trips/segment.sql.ts, finalize.sql.ts) and the API's objectId filter
 *   read it by its prefix. Object ids are uuids, so a rule's id finds only that rule's events.
 * - `events_vehicle_ts` keeps only events with a vehicle: it serves `GET /vehicles/{id}/events`
 *   (`vehicle_id = ?`, which no null matches), and an event of a device outside any vehicle no longer inserts a null
 *   key into it.
 * Three indexes instead of four make each event's insert cheaper (docs/development/performance.md).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('CREATE INDEX IF NOT EXISTS events_object_ts ON events (object_id, ts)');
  await knex.raw('DROP INDEX IF EXISTS events_object');
  await knex.raw('DROP INDEX IF EXISTS events_rule_ts');
  await knex.raw('DROP INDEX IF EXISTS events_vehicle_ts');
  await knex.raw('CREATE INDEX events_vehicle_ts ON events (vehicle_id, ts DESC) WHERE vehicle_id IS NOT NULL');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS events_vehicle_ts');
  await knex.raw('CREATE INDEX events_vehicle_ts ON events (vehicle_id, ts DESC)');
  await knex.raw("CREATE INDEX IF NOT EXISTS events_rule_ts ON events (object_id, ts) WHERE object_type = 'rule'");
  await knex.raw('CREATE INDEX IF NOT EXISTS events_object ON events (object_id)');
  await knex.raw('DROP INDEX IF EXISTS events_object_ts');
}
