import type { Knex } from 'knex';
import { runStatements } from '../sql.js';

/**
 * Rules and their evaluation state (docs/concepts/rules-events-webhooks.md).
 * - `rules` and `rule_boundaries` are immutable once created (delete + create to change a rule).
 *   A boundary keeps its input as given (echoed on read) plus the PostGIS shape evaluation uses:
 *   `center` (geography, so ST_DWithin measures meters) for radius, `area` (geometry) for polygon.
 * - `rule_states`: the current state per rule, read by the API and updated when it changes (migration 016).
 *   `states[i]` is boundary i's last known answer (true inside, false outside, NULL not yet known).
 * - `rule_state_log`: one row per message at which a rule's boundary states changed. The state in
 *   force before any instant is the last row before it, which is where a late frame's
 *   recomputation starts (db/rules/evaluate.ts). Rows are few: they change only at transitions.
 */
export async function up(knex: Knex): Promise<void> {
  await runStatements(knex, `
    CREATE TABLE IF NOT EXISTS rules (
      id uuid PRIMARY KEY,
      application_id uuid NOT NULL REFERENCES applications(id) ON DELETE CASCADE,
      device_id uuid NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
      name text NOT NULL,
      created_at timestamptz NOT NULL
    );
    CREATE INDEX IF NOT EXISTS rules_device ON rules (device_id);
    CREATE INDEX IF NOT EXISTS rules_app_device ON rules (application_id, device_id, created_at DESC);
    CREATE TABLE IF NOT EXISTS rule_boundaries (
      id uuid PRIMARY KEY,
      rule_id uuid NOT NULL REFERENCES rules(id) ON DELETE CASCADE,
      position smallint NOT NULL,
      type text NOT NULL CHECK (type IN ('parametric', 'radius', 'polygon')),
      parameter text,
      min double precision,
      max double precision,
      lon double precision,
      lat double precision,
      radius double precision,
      coordinates jsonb,
      center geography(Point, 4326),
      area geometry(Polygon, 4326),
      UNIQUE (rule_id, position)
    );
    CREATE TABLE IF NOT EXISTS rule_states (
      rule_id uuid PRIMARY KEY REFERENCES rules(id) ON DELETE CASCADE,
      evaluated boolean NOT NULL DEFAULT false,
      covered boolean NOT NULL DEFAULT false,
      states boolean[],
      last_ts timestamptz,
      last_message_id uuid,
      updated_at timestamptz NOT NULL
    );
    CREATE TABLE IF NOT EXISTS rule_state_log (
      rule_id uuid NOT NULL REFERENCES rules(id) ON DELETE CASCADE,
      ts timestamptz NOT NULL,
      message_id uuid NOT NULL,
      states boolean[] NOT NULL,
      PRIMARY KEY (rule_id, ts, message_id)
    );
    CREATE INDEX IF NOT EXISTS events_rule_ts ON events (object_id, ts) WHERE object_type = 'rule';
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS events_rule_ts');
  await knex.raw('DROP TABLE IF EXISTS rule_state_log, rule_states, rule_boundaries, rules CASCADE');
}
