import type { Knex } from 'knex';
import { runStatements } from '../sql.js';

/**
 * Trips and report cards (docs/concepts/trips-and-report-cards.md), derived at ingest (gateway/stages/trips.stage.ts).
 * - `trips`: one row per trip; (device_id, start_ts) identifies a trip across recomputations (late frames).
 *   `stop_ts` is null while the trip is open; `last_ts` is the newest message counted in it. The running sums
 *   (`*_n`, `*_sum`, meters, liters, grams of air) advance per ingest batch; db/trips/formulas.ts turns them
 *   into the trip's statistics. `last_*` columns carry what the next batch needs to continue the sums
 *   (previous location, speed sample, hard-event state). `start_reason`: startup | motion; `end_reason`:
 *   shutdown | stationary | gap | startup | silent. `touched_at`: when a batch last advanced the trip (the
 *   sweep closes open trips not advanced for the gap, whatever their device timestamps). An open trip is
 *   updated once per batch that holds its device's frames: no index covers the columns such an update changes
 *   and pages keep 30% free (fillfactor 70), so the update stays on its page without touching the indexes (HOT).
 * - `report_cards`: one per completed trip (grade A-F or I), `score` in penalty points per 10 km.
 */
export async function up(knex: Knex): Promise<void> {
  await runStatements(knex, `
    CREATE TABLE IF NOT EXISTS trips (
      id uuid PRIMARY KEY,
      device_id uuid NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
      vehicle_id uuid,
      start_ts timestamptz NOT NULL,
      stop_ts timestamptz,
      last_ts timestamptz NOT NULL,
      start_reason text NOT NULL,
      end_reason text,
      start_point geometry(Point, 4326),
      stop_point geometry(Point, 4326),
      preview text,
      message_count integer NOT NULL DEFAULT 0,
      location_count integer NOT NULL DEFAULT 0,
      gps_m float8 NOT NULL DEFAULT 0,
      vss_m float8 NOT NULL DEFAULT 0,
      speed_n integer NOT NULL DEFAULT 0,
      max_speed float8,
      moving_n integer NOT NULL DEFAULT 0,
      moving_sum float8 NOT NULL DEFAULT 0,
      moving_sumsq float8 NOT NULL DEFAULT 0,
      load_n integer NOT NULL DEFAULT 0,
      load_sum float8 NOT NULL DEFAULT 0,
      fuel_rate_l float8 NOT NULL DEFAULT 0,
      air_g float8 NOT NULL DEFAULT 0,
      fuel_n integer NOT NULL DEFAULT 0,
      diesel boolean NOT NULL DEFAULT false,
      hard_accel integer NOT NULL DEFAULT 0,
      hard_brake integer NOT NULL DEFAULT 0,
      stop_count integer NOT NULL DEFAULT 0,
      speeding_ms float8 NOT NULL DEFAULT 0,
      last_location geometry(Point, 4326),
      last_speed float8,
      last_speed_ts timestamptz,
      last_moving_ts timestamptz,
      last_hard text,
      last_stopped boolean NOT NULL DEFAULT false,
      touched_at timestamptz NOT NULL
    ) WITH (fillfactor = 70);
    CREATE UNIQUE INDEX IF NOT EXISTS trips_device_start ON trips (device_id, start_ts);
    CREATE INDEX IF NOT EXISTS trips_vehicle_start ON trips (vehicle_id, start_ts DESC);
    CREATE INDEX IF NOT EXISTS trips_open_device ON trips (device_id) WHERE stop_ts IS NULL;
    CREATE TABLE IF NOT EXISTS report_cards (
      id uuid PRIMARY KEY,
      trip_id uuid NOT NULL UNIQUE REFERENCES trips(id) ON DELETE CASCADE,
      device_id uuid NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
      vehicle_id uuid,
      ts timestamptz NOT NULL,
      grade text NOT NULL CHECK (grade IN ('A', 'B', 'C', 'D', 'F', 'I')),
      score float8,
      created_at timestamptz NOT NULL
    );
    CREATE INDEX IF NOT EXISTS report_cards_device_ts ON report_cards (device_id, ts DESC);
    CREATE INDEX IF NOT EXISTS report_cards_vehicle_ts ON report_cards (vehicle_id, ts DESC);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS report_cards, trips CASCADE');
}
