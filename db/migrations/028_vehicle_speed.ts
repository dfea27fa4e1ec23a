import type { Knex } from 'knex';
import { runStatements } from '../sql.js';

/**
 * A message's vehicle speed (data.vehicleSpeed, km/h) as a column beside the payload it comes from. The
 * gateway writes it with the message, from the frame it decoded (only when it is a number); the distance steps
 * (db/distance/steps.sql.ts VEHICLE_SPEED) and the trip statements (db/trips/segment.sql.ts) read it, and the payload's value
 * where it is null (a message stored before this migration or by another path). Read from the payload, it was a jsonb
 * key lookup and a numeric → text → float8 conversion for each row of the batch and each message the trips read again.
 * The other readings the trips read (load, fuel rate, air flow, acceleration) stay in the payload: as columns, the
 * insert's cost of each outweighed what its reads save (docs/development/performance.md). `data` stays what the API
 * serves. No planner statistics (as migration 021's step columns): no query filters or sorts on it.
 */
export async function up(knex: Knex): Promise<void> {
  await runStatements(knex, `
    ALTER TABLE messages ADD COLUMN IF NOT EXISTS vehicle_speed double precision;
    ALTER TABLE messages ALTER COLUMN vehicle_speed SET STATISTICS 0;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE messages DROP COLUMN IF EXISTS vehicle_speed');
}
