import type { Knex } from 'knex';
import { runStatements } from '../sql.js';

/**
 * Diagnostics and collisions (docs/concepts/diagnostics-and-collisions.md), derived at ingest
 * (gateway/stages/diagnostics.stage.ts, collisions.stage.ts).
 * - `dtc_codes`: one record per trouble code number (the `{code}` of the code endpoints and of dtc-on/dtc-off meta),
 *   created when a code is first seen or looked up; make/system/subsystem/description from db/diagnostics/dtc-info.ts.
 * - `dtc_occurrences`: a code on from `start` (the first report holding it) to `stop` (the first later report
 *   without it; null while on), per device. (device_id, number, start) identifies an occurrence across recomputations.
 * - `battery_readings`: per vehicle and device, the newest reading of each kind (rest, crank, charging) in volts.
 * - `collisions`: one row per impact; `ts` its first sample, `last_ts` its last (samples within the merge gap
 *   join the same impact), location in degrees (WGS 84).
 */
export async function up(knex: Knex): Promise<void> {
  await runStatements(knex, `
    CREATE TABLE IF NOT EXISTS dtc_codes (
      id uuid PRIMARY KEY,
      number text NOT NULL UNIQUE,
      make text NOT NULL,
      system text NOT NULL,
      subsystem text NOT NULL,
      description text NOT NULL
    );
    CREATE TABLE IF NOT EXISTS dtc_occurrences (
      id uuid PRIMARY KEY,
      device_id uuid NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
      vehicle_id uuid,
      code_id uuid NOT NULL REFERENCES dtc_codes(id),
      number text NOT NULL,
      start timestamptz NOT NULL,
      stop timestamptz,
      UNIQUE (device_id, number, start)
    );
    CREATE INDEX IF NOT EXISTS dtc_occurrences_vehicle ON dtc_occurrences (vehicle_id, start DESC);
    CREATE INDEX IF NOT EXISTS dtc_occurrences_device ON dtc_occurrences (device_id, start DESC);
    CREATE TABLE IF NOT EXISTS battery_readings (
      vehicle_id uuid NOT NULL,
      device_id uuid NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
      kind text NOT NULL CHECK (kind IN ('rest', 'crank', 'charging')),
      volts double precision NOT NULL,
      ts timestamptz NOT NULL,
      message_id uuid NOT NULL,
      PRIMARY KEY (vehicle_id, device_id, kind)
    );
    CREATE TABLE IF NOT EXISTS collisions (
      id uuid PRIMARY KEY,
      device_id uuid NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
      vehicle_id uuid,
      ts timestamptz NOT NULL,
      last_ts timestamptz NOT NULL,
      message_id uuid NOT NULL,
      latitude double precision,
      longitude double precision,
      peak_g double precision,
      source text NOT NULL CHECK (source IN ('device', 'accelerometer')),
      UNIQUE (device_id, ts)
    );
    CREATE INDEX IF NOT EXISTS collisions_vehicle ON collisions (vehicle_id, ts DESC);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS collisions, battery_readings, dtc_occurrences, dtc_codes CASCADE');
}
