import type { Knex } from 'knex';
import { runStatements } from '../sql.js';

/**
 * The core of the platform: who may read what (applications, owners, devices, authorizations,
 * registrations), vehicles over time, telemetry, events and the transaction log.
 * Every timestamp is stored with millisecond precision (stream pagination pages by `until − 1 ms`).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('CREATE EXTENSION IF NOT EXISTS postgis');
  await runStatements(knex, `
    CREATE TABLE IF NOT EXISTS applications (
      id uuid PRIMARY KEY,
      name text NOT NULL,
      kind text NOT NULL CHECK (kind IN ('enterprise', 'consumer')),
      secret_hash text NOT NULL,
      webhook_secret text NOT NULL,
      is_default boolean NOT NULL DEFAULT false,
      created_at timestamptz NOT NULL
    );
    CREATE TABLE IF NOT EXISTS access_tokens (
      token_hash text PRIMARY KEY,
      application_id uuid NOT NULL REFERENCES applications(id) ON DELETE CASCADE,
      owner_id uuid,
      expires_at timestamptz,
      created_at timestamptz NOT NULL
    );
    CREATE TABLE IF NOT EXISTS admin_tokens (
      token_hash text PRIMARY KEY,
      created_at timestamptz NOT NULL
    );
    CREATE TABLE IF NOT EXISTS owners (
      id uuid PRIMARY KEY,
      name text NOT NULL,
      email text,
      created_at timestamptz NOT NULL
    );
    CREATE TABLE IF NOT EXISTS devices (
      id uuid PRIMARY KEY,
      owner_id uuid NOT NULL REFERENCES owners(id),
      name text NOT NULL,
      chip_id text NOT NULL,
      case_id text NOT NULL UNIQUE,
      icon text,
      secret_hash text NOT NULL,
      created_at timestamptz NOT NULL
    );
    CREATE TABLE IF NOT EXISTS authorizations (
      device_id uuid NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
      application_id uuid NOT NULL REFERENCES applications(id) ON DELETE CASCADE,
      owner_id uuid NOT NULL REFERENCES owners(id),
      created_at timestamptz NOT NULL,
      PRIMARY KEY (device_id, application_id)
    );
    CREATE INDEX IF NOT EXISTS authorizations_app ON authorizations (application_id, created_at);
    CREATE TABLE IF NOT EXISTS registrations (
      application_id uuid NOT NULL REFERENCES applications(id) ON DELETE CASCADE,
      device_id uuid NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
      created_at timestamptz NOT NULL,
      PRIMARY KEY (application_id, device_id)
    );
    CREATE INDEX IF NOT EXISTS registrations_app ON registrations (application_id, created_at);
    CREATE TABLE IF NOT EXISTS vehicles (
      id uuid PRIMARY KEY,
      vin text NOT NULL UNIQUE,
      year text, make text, model text, trim text,
      data jsonb,
      created_at timestamptz NOT NULL,
      last_startup timestamptz
    );
    CREATE TABLE IF NOT EXISTS device_vehicles (
      id uuid PRIMARY KEY,
      device_id uuid NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
      vehicle_id uuid NOT NULL REFERENCES vehicles(id) ON DELETE CASCADE,
      started_at timestamptz NOT NULL,
      created_at timestamptz NOT NULL
    );
    CREATE INDEX IF NOT EXISTS device_vehicles_device ON device_vehicles (device_id, started_at);
    CREATE INDEX IF NOT EXISTS device_vehicles_vehicle ON device_vehicles (vehicle_id, started_at);
    CREATE TABLE IF NOT EXISTS messages (
      id uuid PRIMARY KEY,
      device_id uuid NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
      ts timestamptz NOT NULL,
      frame_id text,
      kind text NOT NULL DEFAULT 'telemetry',
      data jsonb NOT NULL,
      location geometry(Point, 4326),
      extra jsonb,
      received_at timestamptz NOT NULL
    );
    CREATE INDEX IF NOT EXISTS messages_device_ts ON messages (device_id, ts DESC);
    CREATE UNIQUE INDEX IF NOT EXISTS messages_device_frame ON messages (device_id, frame_id) WHERE frame_id IS NOT NULL;
    CREATE INDEX IF NOT EXISTS messages_location ON messages USING gist (location);
    CREATE TABLE IF NOT EXISTS dead_letters (
      id bigserial PRIMARY KEY,
      device_id text,
      topic text NOT NULL,
      frame_index integer,
      reason text NOT NULL,
      raw bytea,
      received_at timestamptz NOT NULL
    );
    CREATE TABLE IF NOT EXISTS events (
      id uuid PRIMARY KEY,
      device_id uuid NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
      vehicle_id uuid,
      application_id uuid,
      ts timestamptz NOT NULL,
      stored timestamptz NOT NULL,
      event_type text NOT NULL,
      object_type text NOT NULL,
      object_id uuid,
      meta jsonb
    );
    CREATE INDEX IF NOT EXISTS events_device_ts ON events (device_id, ts DESC);
    CREATE INDEX IF NOT EXISTS events_vehicle_ts ON events (vehicle_id, ts DESC);
    CREATE INDEX IF NOT EXISTS events_object ON events (object_id);
    CREATE TABLE IF NOT EXISTS transactions (
      id uuid PRIMARY KEY,
      application_id uuid NOT NULL REFERENCES applications(id) ON DELETE CASCADE,
      ts timestamptz NOT NULL,
      path text NOT NULL,
      status_code integer NOT NULL,
      method text NOT NULL,
      service text NOT NULL
    );
    CREATE INDEX IF NOT EXISTS transactions_app_ts ON transactions (application_id, ts DESC);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`DROP TABLE IF EXISTS transactions, events, dead_letters, messages, device_vehicles, vehicles,
    registrations, authorizations, devices, owners, admin_tokens, access_tokens, applications CASCADE`);
}
