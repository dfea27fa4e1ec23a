// A vehicle's "now": the wall clock, or the latest stamp of its devices' messages when that is later. A dummy's runs
// at a speed factor stamp ahead of the wall clock (simulator/clock.ts); what the platform reads "as of now" for a
// vehicle (its odometer estimate, the default date of a reading, where a new trigger starts) is as of its own clock,
// so a run's distance counts as soon as it is stored, and a reading set between two runs falls between them.
import type { Knex } from 'knex';

/** One index probe per device of the vehicle (messages (device_id, ts)). */
const LATEST = `
  SELECT max(l.ts) AS ts FROM (SELECT DISTINCT dv.device_id FROM device_vehicles dv WHERE dv.vehicle_id = ?) d
  CROSS JOIN LATERAL (SELECT m.ts FROM messages m WHERE m.device_id = d.device_id ORDER BY m.ts DESC LIMIT 1) l`;

export async function vehicleNow(trx: Knex, vehicleId: string, now = new Date()): Promise<Date> {
  const { rows } = await trx.raw(LATEST, [vehicleId]);
  const latest = rows[0]?.ts ? new Date(rows[0].ts) : null;
  return latest && latest.getTime() > now.getTime() ? latest : now;
}
