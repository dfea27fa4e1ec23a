// Distance steps, set-based per ingest batch (spec 2.11): the first half of the batch's one distance statement
// (db/distance/triggers.sql.ts adds the triggers). Parameter: the batch's new message ids.
import { STEP } from './model.js';
import { vehicleAt } from '../vehicle-at.sql.js';

const SPEED = (alias: string) =>
  `CASE WHEN jsonb_typeof(${alias}.data -> 'vehicleSpeed') = 'number' THEN (${alias}.data ->> 'vehicleSpeed')::float8 END`;

/**
 * `delta` holds the changes of vehicle totals (per vehicle, device and time), `totals` the new totals, `readings` the
 * readings whose anchor moved, with their new value.
 * The messages whose step changes are the batch's new ones (`fresh`: the batch's own values, as bound; the statement
 * runs after they are stored) and, for each late one, the next stored message of its device (a late frame splits its
 * successor's step). Each gets its step from its predecessor (db/distance/model.ts), is upserted, and the difference
 * with the stored step moves the vehicle's total (`vehicle_distances`) and the totals recorded at odometer readings
 * dated after it: a late frame before a reading leaves the estimate from it.
 * Reads of the history are only where the batch alone cannot answer (issue 13: they were three index reads per
 * message): `after` is the device's newest timestamp before the batch, so a new message later than it has no stored
 * successor, and when the previous new message of its device is later than it too, that one is its predecessor
 * (every stored message is at or before `after`). So an in-order batch reads one predecessor per device, and a late
 * one reads what it would have before. The lookups that remain are gated per row (a one-time filter: no index read
 * when false). Data-modifying CTEs run to completion whether or not the final SELECT reads them. `old` looks up the
 * stored steps of the successors only (a new message has none yet) by key (LIMIT keeps the planner from hashing the
 * whole table, whatever its statistics say); successors are read through the (device_id, ts, id) index.
 * Bindings (arrays, one entry per new message): id, device_id, ts, lon, lat, vehicleSpeed, after (stepBindings in
 * db/distance/triggers.sql.ts).
 */
export const STEP_CTES = `
  fresh AS (
    SELECT n.id, n.device_id, n.ts, n.after, n.v,
      CASE WHEN n.lon IS NULL OR n.lat IS NULL THEN NULL ELSE ST_SetSRID(ST_MakePoint(n.lon, n.lat), 4326) END AS location
    FROM unnest(?::uuid[], ?::uuid[], ?::timestamptz[], ?::float8[], ?::float8[], ?::float8[], ?::timestamptz[])
      AS n(id, device_id, ts, lon, lat, v, after)),
  successors AS (
    SELECT DISTINCT ON (s.id) s.id, s.device_id, s.ts, s.location, s.v FROM fresh f CROSS JOIN LATERAL (
      SELECT m.id, m.device_id, m.ts, m.location, ${SPEED('m')} AS v FROM messages m
      WHERE f.ts <= f.after AND m.device_id = f.device_id AND m.ts >= f.ts AND (m.ts, m.id) > (f.ts, f.id)
      ORDER BY m.ts, m.id LIMIT 1) s
    WHERE NOT EXISTS (SELECT 1 FROM fresh f2 WHERE f2.id = s.id)),
  ordered AS (
    SELECT f.id, f.device_id, f.ts, f.location, f.v,
      lag(f.id) OVER w AS l_id, lag(f.ts) OVER w AS l_ts, lag(f.location) OVER w AS l_loc, lag(f.v) OVER w AS l_v,
      f.after
    FROM fresh f WINDOW w AS (PARTITION BY f.device_id ORDER BY f.ts, f.id)),
  affected AS (
    SELECT o.id, o.device_id, o.ts, o.location, o.v, o.l_ts, o.l_loc, o.l_v,
      o.l_id IS NOT NULL AND (o.after IS NULL OR o.l_ts > o.after) AS known
    FROM ordered o
    UNION ALL
    SELECT s.id, s.device_id, s.ts, s.location, s.v, NULL, NULL, NULL, false FROM successors s),
  pairs AS (
    SELECT a.id, a.device_id, a.ts, a.location AS loc, a.v,
      CASE WHEN a.known THEN a.l_ts ELSE p.ts END AS p_ts, CASE WHEN a.known THEN a.l_loc ELSE p.location END AS p_loc,
      CASE WHEN a.known THEN a.l_v ELSE p.v END AS p_v,
      ${vehicleAt('a.device_id', 'a.ts')} AS vehicle_id
    FROM affected a
    LEFT JOIN LATERAL (
      SELECT m.ts, m.location, ${SPEED('m')} AS v FROM messages m
      WHERE NOT a.known AND m.device_id = a.device_id AND m.ts <= a.ts AND (m.ts, m.id) < (a.ts, a.id)
      ORDER BY m.ts DESC, m.id DESC LIMIT 1) p ON true),
  measured AS MATERIALIZED (
    SELECT pr.*, extract(epoch FROM pr.ts - pr.p_ts)::float8 AS dt,
      CASE WHEN pr.loc IS NOT NULL AND pr.p_loc IS NOT NULL THEN ST_Distance(pr.loc::geography, pr.p_loc::geography) END AS gps_m
    FROM pairs pr),
  judged AS (
    SELECT me.*,
      me.gps_m IS NOT NULL AND me.gps_m <= ${STEP.MAX_GPS_KMH} / 3.6 * greatest(me.dt, 1) AS gps_ok,
      (me.v = 0 AND me.p_v = 0) OR (coalesce(me.v, 0) = 0 AND coalesce(me.p_v, 0) = 0 AND me.gps_m < ${STEP.JITTER_M}) AS parked
    FROM measured me),
  steps AS (
    SELECT j.id, j.device_id, j.vehicle_id, j.ts,
      CASE WHEN j.p_ts IS NULL THEN 0
        WHEN j.gps_ok AND j.parked THEN 0
        WHEN j.gps_ok THEN j.gps_m
        WHEN j.v IS NOT NULL AND j.p_v IS NOT NULL AND j.dt > 0 AND j.dt <= ${STEP.VSS_MAX_GAP_S} THEN (j.v + j.p_v) / 2 / 3.6 * j.dt
        ELSE 0 END AS meters,
      CASE WHEN j.p_ts IS NULL THEN 'none'
        WHEN j.gps_ok THEN 'gps'
        WHEN j.v IS NOT NULL AND j.p_v IS NOT NULL AND j.dt > 0 AND j.dt <= ${STEP.VSS_MAX_GAP_S} THEN 'vss'
        ELSE 'none' END AS source
    FROM judged j),
  old AS MATERIALIZED (
    SELECT s.message_id, s.device_id, s.vehicle_id, s.ts, s.meters, s.source FROM successors a CROSS JOIN LATERAL (
      SELECT * FROM distance_steps s WHERE s.message_id = a.id LIMIT 1) s),
  upserted AS (
    INSERT INTO distance_steps (message_id, device_id, vehicle_id, ts, meters, source)
    SELECT id, device_id, vehicle_id, ts, meters, source FROM steps
    ON CONFLICT (message_id) DO UPDATE SET vehicle_id = EXCLUDED.vehicle_id, meters = EXCLUDED.meters, source = EXCLUDED.source
    RETURNING message_id),
  delta AS (
    SELECT vehicle_id, device_id, ts, sum(meters) AS meters,
      sum(meters) FILTER (WHERE source = 'gps') AS gps, sum(meters) FILTER (WHERE source = 'vss') AS vss
    FROM (SELECT vehicle_id, device_id, ts, meters, source FROM steps
          UNION ALL SELECT vehicle_id, device_id, ts, -meters, source FROM old) x
    WHERE vehicle_id IS NOT NULL
    GROUP BY vehicle_id, device_id, ts HAVING sum(meters) <> 0),
  totals AS (
    INSERT INTO vehicle_distances (vehicle_id, travelled_m, gps_m, vss_m, updated_at)
    SELECT d.vehicle_id, sum(d.meters), coalesce(sum(d.gps), 0), coalesce(sum(d.vss), 0), now() FROM delta d
    WHERE EXISTS (SELECT 1 FROM vehicles v WHERE v.id = d.vehicle_id)
    GROUP BY d.vehicle_id
    ON CONFLICT (vehicle_id) DO UPDATE SET travelled_m = vehicle_distances.travelled_m + EXCLUDED.travelled_m,
      gps_m = vehicle_distances.gps_m + EXCLUDED.gps_m, vss_m = vehicle_distances.vss_m + EXCLUDED.vss_m, updated_at = EXCLUDED.updated_at
    RETURNING vehicle_id, travelled_m),
  readings AS (
    UPDATE odometers o SET travelled_m = o.travelled_m + x.meters, gps_m = o.gps_m + x.gps, vss_m = o.vss_m + x.vss
    FROM (SELECT o2.id, sum(d.meters) AS meters, coalesce(sum(d.gps), 0) AS gps, coalesce(sum(d.vss), 0) AS vss
          FROM odometers o2 JOIN delta d ON d.vehicle_id = o2.vehicle_id AND d.ts <= o2.date GROUP BY o2.id) x
    WHERE o.id = x.id RETURNING o.id, o.travelled_m)`;
