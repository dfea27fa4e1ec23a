import type { Knex } from 'knex';
import { runStatements } from '../sql.js';

/**
 * Distance and odometers (docs/concepts/distance-and-odometers.md), derived at ingest
 * (gateway/stages/distance.stage.ts, db/distance/).
 * - `distance_steps`: per stored message, the meters travelled since the device's previous message (GPS
 *   great-circle distance, else vehicle speed integrated; db/distance/model.ts), attributed to the vehicle the
 *   device was in. Recomputed for a late frame and its successor only.
 * - `vehicle_distances`: per vehicle, the running total of its steps (all time), split by source; the stage
 *   adds each batch's change, so no statement ever sums a vehicle's whole history at ingest.
 * - `odometers`: readings in meters (per application); `travelled_m` (split `gps_m`/`vss_m`) is the vehicle's total
 *   at `date`, so the estimate later is reading + (total now − travelled_m) without summing the steps in between.
 * - `odometer_triggers`: thresholds in meters; `next_m` is the value (odometer estimate, or travelled total for
 *   from_now) at which it fires next; `done` once a one-shot trigger fired; `events` counts firings.
 */
export async function up(knex: Knex): Promise<void> {
  await runStatements(knex, `
    CREATE TABLE IF NOT EXISTS distance_steps (
      message_id uuid PRIMARY KEY,
      device_id uuid NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
      vehicle_id uuid,
      ts timestamptz NOT NULL,
      meters double precision NOT NULL,
      source text NOT NULL CHECK (source IN ('gps', 'vss', 'none'))
    );
    CREATE INDEX IF NOT EXISTS distance_steps_vehicle_ts ON distance_steps (vehicle_id, ts);
    CREATE TABLE IF NOT EXISTS vehicle_distances (
      vehicle_id uuid PRIMARY KEY REFERENCES vehicles(id) ON DELETE CASCADE,
      travelled_m double precision NOT NULL,
      gps_m double precision NOT NULL,
      vss_m double precision NOT NULL,
      updated_at timestamptz NOT NULL
    );
    CREATE TABLE IF NOT EXISTS odometers (
      id uuid PRIMARY KEY,
      vehicle_id uuid NOT NULL REFERENCES vehicles(id) ON DELETE CASCADE,
      application_id uuid NOT NULL REFERENCES applications(id) ON DELETE CASCADE,
      reading_m double precision NOT NULL CHECK (reading_m >= 0),
      date timestamptz NOT NULL,
      travelled_m double precision NOT NULL,
      gps_m double precision NOT NULL,
      vss_m double precision NOT NULL,
      created_at timestamptz NOT NULL
    );
    CREATE INDEX IF NOT EXISTS odometers_vehicle_app_date ON odometers (vehicle_id, application_id, date DESC);
    CREATE TABLE IF NOT EXISTS odometer_triggers (
      id uuid PRIMARY KEY,
      vehicle_id uuid NOT NULL REFERENCES vehicles(id) ON DELETE CASCADE,
      application_id uuid NOT NULL REFERENCES applications(id) ON DELETE CASCADE,
      type text NOT NULL CHECK (type IN ('specific', 'from_now', 'milestone')),
      threshold_m double precision NOT NULL CHECK (threshold_m > 0),
      events integer NOT NULL DEFAULT 0,
      next_m double precision NOT NULL,
      done boolean NOT NULL DEFAULT false,
      created_at timestamptz NOT NULL
    );
    CREATE INDEX IF NOT EXISTS odometer_triggers_vehicle ON odometer_triggers (vehicle_id, created_at DESC);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS odometer_triggers, odometers, vehicle_distances, distance_steps CASCADE');
}
