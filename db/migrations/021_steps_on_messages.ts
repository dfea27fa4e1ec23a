import type { Knex } from 'knex';
import { runStatements } from '../sql.js';
import { devicesDeleteHistory, HISTORY_014 } from './014_history_keys.js';

/**
 * A message's distance step moves from its own `distance_steps` row onto the message: `step_m` (meters since
 * the device's previous message), `step_source` ('gps', 'vss' or 'none') and `step_vehicle_id` (the vehicle it counted
 * for), written by the statement that stores the message (db/distance/steps.sql.ts). Writing a second row per message,
 * with its primary key, its (vehicle_id, ts) index and its ON CONFLICT check, and analyzing that table as it grew,
 * was a sizeable share of the ingest path's database work (docs/development/performance.md).
 * The vehicle's steps after a time are now read through its devices' (device_id, ts) index (db/distance/estimate.sql.ts).
 * Existing steps are copied over; a message that had none keeps nulls (no step). The new columns, like the payload's,
 * have no planner statistics (migration 012): no query filters or sorts on them.
 */
const HISTORY_021 = ['messages', 'events'];

export async function up(knex: Knex): Promise<void> {
  await runStatements(knex, `
    ALTER TABLE messages ADD COLUMN IF NOT EXISTS step_m double precision, ADD COLUMN IF NOT EXISTS step_source text,
      ADD COLUMN IF NOT EXISTS step_vehicle_id uuid;
    ALTER TABLE messages ALTER COLUMN step_m SET STATISTICS 0, ALTER COLUMN step_source SET STATISTICS 0,
      ALTER COLUMN step_vehicle_id SET STATISTICS 0;
    UPDATE messages m SET step_m = s.meters, step_source = s.source, step_vehicle_id = s.vehicle_id
      FROM distance_steps s WHERE s.message_id = m.id;
    DROP TABLE distance_steps;
  `);
  await knex.raw(devicesDeleteHistory(HISTORY_021));
}

export async function down(knex: Knex): Promise<void> {
  await runStatements(knex, `
    CREATE TABLE IF NOT EXISTS distance_steps (
      message_id uuid PRIMARY KEY,
      device_id uuid NOT NULL,
      vehicle_id uuid,
      ts timestamptz NOT NULL,
      meters double precision NOT NULL,
      source text NOT NULL CHECK (source IN ('gps', 'vss', 'none'))
    );
    CREATE INDEX IF NOT EXISTS distance_steps_vehicle_ts ON distance_steps (vehicle_id, ts);
    INSERT INTO distance_steps (message_id, device_id, vehicle_id, ts, meters, source)
      SELECT id, device_id, step_vehicle_id, ts, step_m, step_source FROM messages WHERE step_m IS NOT NULL;
    ALTER TABLE messages DROP COLUMN step_m, DROP COLUMN step_source, DROP COLUMN step_vehicle_id;
  `);
  await knex.raw(devicesDeleteHistory([...HISTORY_014, 'events']));
}
