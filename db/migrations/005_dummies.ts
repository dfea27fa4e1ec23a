import type { Knex } from 'knex';
import { runStatements } from '../sql.js';

/**
 * Simulated devices (docs/concepts/simulator.md): routes, dummies and their runs.
 * - routes: `application_id` NULL for the routes seeded from routes-data/ (visible to every
 *   application), else the application that imported it (visible to it only).
 * - dummies: the platform's own clients; each holds its device's MQTT secret so the run scheduler
 *   can connect as the device. `last_frame_at` is the latest frame stamp the dummy sent (epoch ms
 *   precision), so a new pass never stamps frames before it.
 * - runs: one active run per dummy (partial unique index); finished runs stay as history.
 *   The scheduler leases a run (`lease_owner`, `lease_until`) so two workers never drive it.
 */
export async function up(knex: Knex): Promise<void> {
  await runStatements(knex, `
    CREATE TABLE IF NOT EXISTS routes (
      id uuid PRIMARY KEY,
      application_id uuid REFERENCES applications(id) ON DELETE CASCADE,
      name text NOT NULL,
      description text NOT NULL DEFAULT '',
      polyline text NOT NULL,
      message_count integer NOT NULL,
      location_count integer NOT NULL,
      distance_by_gps double precision NOT NULL,
      distance_by_vss double precision NOT NULL,
      duration_ms double precision NOT NULL,
      profile jsonb,
      stops jsonb,
      created_at timestamptz NOT NULL
    );
    CREATE INDEX IF NOT EXISTS routes_app_name ON routes (application_id, name);
    CREATE TABLE IF NOT EXISTS dummies (
      id uuid PRIMARY KEY,
      application_id uuid NOT NULL REFERENCES applications(id) ON DELETE CASCADE,
      device_id uuid NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
      name text NOT NULL,
      device_secret text NOT NULL,
      last_frame_at timestamptz,
      created_at timestamptz NOT NULL
    );
    CREATE UNIQUE INDEX IF NOT EXISTS dummies_app_name ON dummies (application_id, name);
    CREATE INDEX IF NOT EXISTS dummies_app_created ON dummies (application_id, created_at);
    CREATE TABLE IF NOT EXISTS runs (
      id uuid PRIMARY KEY,
      dummy_id uuid NOT NULL REFERENCES dummies(id) ON DELETE CASCADE,
      route_id uuid NOT NULL REFERENCES routes(id),
      vin text NOT NULL,
      repeat boolean NOT NULL DEFAULT false,
      speed double precision NOT NULL DEFAULT 1,
      scenarios jsonb NOT NULL DEFAULT '[]',
      interval_ms integer NOT NULL DEFAULT 1000,
      state text NOT NULL CHECK (state IN ('starting', 'running', 'stopping', 'finished')),
      outcome text CHECK (outcome IN ('completed', 'stopped', 'failed')),
      error text,
      repeat_count integer NOT NULL DEFAULT 0,
      last_speed double precision,
      remaining_seconds double precision,
      remaining_messages integer,
      progress_at timestamptz,
      next_pass_at timestamptz,
      frames_sent integer NOT NULL DEFAULT 0,
      distance double precision NOT NULL DEFAULT 0,
      drive_ms double precision NOT NULL DEFAULT 0,
      lease_owner text,
      lease_until timestamptz,
      created_at timestamptz NOT NULL,
      started_at timestamptz,
      ended_at timestamptz
    );
    CREATE UNIQUE INDEX IF NOT EXISTS runs_one_active ON runs (dummy_id) WHERE state <> 'finished';
    CREATE INDEX IF NOT EXISTS runs_active ON runs (created_at) WHERE state <> 'finished';
    CREATE INDEX IF NOT EXISTS runs_dummy_created ON runs (dummy_id, created_at DESC);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS runs, dummies, routes CASCADE');
}
