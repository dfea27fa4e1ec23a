// The odometer estimate (docs/concepts/distance-and-odometers.md): a reading plus the distance the vehicle's steps add
// after it.
import type { Knex } from 'knex';
import { halfWidth } from './model.js';

/** Meters travelled, split by how they were measured. */
export interface Travelled { totalM: number; gpsM: number; vssM: number }

export interface Estimate {
  valueM: number; confidenceMinM: number; confidenceMaxM: number;
  /** The reading the estimate starts from; null when there is none (the estimate is then what the platform saw). */
  lastOdometerDate: Date | null;
  readingId: string | null;
  /** Since the reading (or in all, without one). */
  since: Travelled;
}

/**
 * The vehicle's travelled total up to `at`: the running total minus the steps after `at` (few, for recent times).
 * A step counted for a vehicle was measured while its device was associated with it, so the steps are those of the
 * vehicle's devices (each read once, through its (device_id, ts) index) that counted for it.
 */
const TRAVELLED_AT = `
  SELECT coalesce(vd.travelled_m, 0) - coalesce(a.total, 0) AS total_m, coalesce(vd.gps_m, 0) - coalesce(a.gps, 0) AS gps_m,
    coalesce(vd.vss_m, 0) - coalesce(a.vss, 0) AS vss_m
  FROM (SELECT ?::uuid AS vehicle_id, ?::timestamptz AS at) q
  LEFT JOIN vehicle_distances vd ON vd.vehicle_id = q.vehicle_id
  LEFT JOIN LATERAL (
    SELECT sum(s.step_m) AS total, sum(s.step_m) FILTER (WHERE s.step_source = 'gps') AS gps,
      sum(s.step_m) FILTER (WHERE s.step_source = 'vss') AS vss
    FROM (SELECT DISTINCT dv.device_id FROM device_vehicles dv WHERE dv.vehicle_id = q.vehicle_id) d
    CROSS JOIN LATERAL (SELECT m.step_m, m.step_source FROM messages m
      WHERE m.device_id = d.device_id AND m.ts > q.at AND m.step_vehicle_id = q.vehicle_id OFFSET 0) s) a ON true`;

/** The application's readings dated in (since, until], newest first, with the vehicle's totals at their dates. */
const READINGS = `
  SELECT o.id, o.reading_m, o.date, o.travelled_m, o.gps_m, o.vss_m FROM odometers o
  WHERE o.vehicle_id = ? AND o.application_id = ? AND o.date <= ? AND (?::timestamptz IS NULL OR o.date > ?)
  ORDER BY o.date DESC, o.created_at DESC LIMIT ?`;

const num = (v: unknown) => Number(v ?? 0);
/** A number column as SQL returns it (float8, or numeric text); null counts as 0. */
type NumColumn = number | string | null;
const travelledOf = (r: { total_m: NumColumn; gps_m: NumColumn; vss_m: NumColumn }): Travelled =>
  ({ totalM: num(r.total_m), gpsM: num(r.gps_m), vssM: num(r.vss_m) });
/** A row of READINGS. */
interface ReadingRow { id: string; reading_m: NumColumn; date: Date | string; travelled_m: NumColumn; gps_m: NumColumn; vss_m: NumColumn }

function estimate(base: number, since: Travelled, anchor: { id: string; date: Date } | null): Estimate {
  const valueM = base + since.totalM;
  const hw = halfWidth(since.gpsM, since.vssM, anchor !== null);
  return {
    valueM, confidenceMinM: Math.max(0, valueM - hw), confidenceMaxM: valueM + hw,
    lastOdometerDate: anchor?.date ?? null, readingId: anchor?.id ?? null, since,
  };
}

export async function travelled(trx: Knex, vehicleId: string, at: Date): Promise<Travelled> {
  const { rows } = await trx.raw(TRAVELLED_AT, [vehicleId, at]);
  return travelledOf(rows[0]);
}

/**
 * The estimates at `until` from each of the application's readings dated in (since, until], newest first: the
 * reading plus the vehicle's total at `until` minus its total at the reading's date (both kept up to date at ingest,
 * so nothing sums the steps in between); without any, what the platform saw: the vehicle's total up to `until`.
 */
export async function estimates(trx: Knex, appId: string, vehicleId: string,
  w: { since?: Date; until: Date; limit: number }): Promise<Estimate[]> {
  const at = await travelled(trx, vehicleId, w.until);
  const { rows } = await trx.raw(READINGS, [vehicleId, appId, w.until, w.since ?? null, w.since ?? null, w.limit]);
  if (!rows.length) return [estimate(0, at, null)];
  // Steps are never negative, so the totals only grow; max() absorbs float rounding.
  const since = (r: ReadingRow): Travelled => ({
    totalM: Math.max(0, at.totalM - num(r.travelled_m)), gpsM: Math.max(0, at.gpsM - num(r.gps_m)), vssM: Math.max(0, at.vssM - num(r.vss_m)),
  });
  return (rows as ReadingRow[]).map((r) => estimate(num(r.reading_m), since(r), { id: r.id, date: new Date(r.date) }));
}

/** The application's readings dated in (since, until], oldest first, with the vehicle's totals at their dates. */
const READINGS_OLDEST_FIRST = `
  SELECT o.id, o.reading_m, o.date, o.travelled_m, o.gps_m, o.vss_m FROM odometers o
  WHERE o.vehicle_id = ? AND o.application_id = ? AND o.date <= ? AND (?::timestamptz IS NULL OR o.date > ?)
  ORDER BY o.date, o.created_at`;

/**
 * The odometer estimate at `until` (`_latest`), which never decreases as `until` grows: the latest reading dated in
 * (since, until] plus the vehicle's distance since it, but no less than the estimate reached just before that reading
 * (each earlier reading plus the distance up to the next reading's date). A reading below that (the platform measured
 * more than the odometer shows) holds the estimate still until the vehicle has driven past it, instead of moving the
 * estimate back. The readings counted are those since the last one that went backwards (below a reading dated before
 * it, recorded with allowDecrease): there the estimate starts again from that reading. The interval spans both the
 * latest reading plus the distance since and the value, widened as `estimate` does. Without a reading: what the
 * platform saw, as `estimates`.
 */
export async function latestEstimate(trx: Knex, appId: string, vehicleId: string, w: { since?: Date; until: Date }): Promise<Estimate> {
  const at = await travelled(trx, vehicleId, w.until);
  const { rows } = await trx.raw(READINGS_OLDEST_FIRST, [vehicleId, appId, w.until, w.since ?? null, w.since ?? null]);
  const readings = rows as ReadingRow[];
  if (!readings.length) return estimate(0, at, null);
  let from = 0;
  let highest = -Infinity;
  readings.forEach((r, i) => {
    if (num(r.reading_m) < highest) from = i;
    highest = Math.max(highest, num(r.reading_m));
  });
  const segment = readings.slice(from);
  const latest = segment.at(-1)!;
  // what each earlier reading of the segment had reached when the next one was read
  const held = segment.slice(0, -1).reduce((m, r, i) => Math.max(m, num(r.reading_m) + Math.max(0, num(segment[i + 1].travelled_m) - num(r.travelled_m))), -Infinity);
  const since: Travelled = {
    totalM: Math.max(0, at.totalM - num(latest.travelled_m)), gpsM: Math.max(0, at.gpsM - num(latest.gps_m)), vssM: Math.max(0, at.vssM - num(latest.vss_m)),
  };
  const own = estimate(num(latest.reading_m), since, { id: latest.id, date: new Date(latest.date) });
  if (!(held > own.valueM)) return own;
  return { ...own, valueM: held, confidenceMaxM: held + (own.confidenceMaxM - own.valueM) };
}

/**
 * Where a new trigger starts: the estimate at `now` (the vehicle's clock, db/vehicle-clock.ts) from the application's
 * latest reading, and the vehicle's running travelled total (all steps ingested so far, whatever their timestamps:
 * triggers count what is ingested after them).
 */
export async function currentState(trx: Knex, appId: string, vehicleId: string, now = new Date()) {
  const best = await latestEstimate(trx, appId, vehicleId, { until: now });
  const row = await trx('vehicle_distances').select('travelled_m').where({ vehicle_id: vehicleId }).first();
  return { estimateM: best.valueM, travelledM: Number(row?.travelled_m ?? 0) };
}
