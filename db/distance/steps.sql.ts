// Distance steps (docs/concepts/distance-and-odometers.md), set-based per ingest batch. A message's step (the meters
// since its device's previous message, db/distance/model.ts) is measured by the statement that stores it and kept on
// its row (`messages.step_m`, `step_source`, `step_vehicle_id`: migration 021); the batch's distance statement
// (db/distance/triggers.sql.ts) then re-measures the successors of late frames and moves the vehicles' totals.
import { STEP } from './model.js';
import { vehicleAt } from '../vehicle-at.sql.js';
import { numAt } from '../message-data.sql.js';

export type StepSource = 'gps' | 'vss' | 'none';

/** A stored message's step as its insert measured it: meters, how, and the vehicle it counted for. */
export interface StoredStep { meters: number; source: StepSource; vehicleId: string | null }

/**
 * A message's vehicleSpeed (km/h), null when it carried none: its slot (db/message-data.sql.ts; `alias` a messages row
 * or the batch's new_batch row). The trips and rules read the speed through it too.
 */
export const VEHICLE_SPEED = (alias: string) => numAt(alias, 'vehicleSpeed');

/**
 * The meters between two points (geometry, SRID 4326) on the WGS 84 spheroid: what `ST_Distance` on their geography
 * casts gives (to within 1e-8 m), without building the two geographies (docs/development/performance.md).
 */
export const SPHEROID_M = (a: string, b: string) => `ST_DistanceSpheroid(${a}, ${b})`;

/** The latest stored message before `row` (its device's, in (ts, id) order), through the (device_id, ts, id) index. */
const PREDECESSOR = (row: string, gate = 'true') => `
      SELECT m.id, m.ts, m.location, ${VEHICLE_SPEED('m')} AS v FROM messages m
      WHERE ${gate} AND m.device_id = ${row}.device_id AND m.ts <= ${row}.ts AND (m.ts, m.id) < (${row}.ts, ${row}.id)
      ORDER BY m.ts DESC, m.id DESC LIMIT 1`;

/**
 * The model over `<p>pairs` (id, device_id, vehicle_id, ts, loc, v and the predecessor's p_ts, p_loc, p_v; p_ts null:
 * none): `<p>steps` (id, device_id, vehicle_id, ts, meters, source).
 */
const measure = (p: string) => `
  ${p}measured AS MATERIALIZED (
    SELECT pr.*, date_part('epoch', pr.ts - pr.p_ts) AS dt,
      CASE WHEN pr.loc IS NOT NULL AND pr.p_loc IS NOT NULL THEN ${SPHEROID_M('pr.loc', 'pr.p_loc')} END AS gps_m
    FROM ${p}pairs pr),
  ${p}judged AS (
    SELECT me.*,
      me.gps_m IS NOT NULL AND me.gps_m <= ${STEP.MAX_GPS_KMH} / 3.6 * greatest(me.dt, 1) AS gps_ok,
      (me.v = 0 AND me.p_v = 0) OR (coalesce(me.v, 0) = 0 AND coalesce(me.p_v, 0) = 0 AND me.gps_m < ${STEP.JITTER_M}) AS parked
    FROM ${p}measured me),
  ${p}steps AS (
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
    FROM ${p}judged j)`;

/** A device's newest stored message at or after (ts, id) `from` (all of them: `from` null), through messages_device_ts_id. */
const NEWEST = (device: string, from?: { ts: string; id: string }) => `
    (SELECT m.ts, m.id, m.location, ${VEHICLE_SPEED('m')} AS v FROM messages m WHERE m.device_id = ${device}${from ? `
      AND m.ts >= ${from.ts} AND (m.ts, m.id) >= (${from.ts}, ${from.id})` : ''}
    ORDER BY m.ts DESC, m.id DESC LIMIT 1)`;

/**
 * Each device's newest stored message (null columns: none) for the insert statement, as `latest` (device_id, latest:
 * its timestamp, latest_id, latest_loc, latest_v). Parameters: the batch's device ids, and for each the (ts, id) of the
 * newest message the caller knows it stored (a hint; nulls: none). The newest message is read from the hint on, and
 * only without one at or after it (no hint, or it was deleted) from the whole history: PostgreSQL 15 reads a whole
 * leaf page of the device's index entries for the unbounded `ORDER BY … DESC LIMIT 1`, one entry for the hinted one.
 * A hint can only make the read cheaper: a message
 * newer than it is found either way, and a hint newer than every message falls back to the whole history.
 */
export const LATEST_MESSAGE = `
  SELECT e.v AS device_id, n.ts AS latest, n.id AS latest_id, n.location AS latest_loc, n.v AS latest_v
  FROM unnest(?::uuid[], ?::timestamptz[], ?::uuid[]) AS e(v, hint_ts, hint_id) LEFT JOIN LATERAL (${NEWEST('e.v', { ts: 'e.hint_ts', id: 'e.hint_id' })}
    UNION ALL ${NEWEST('e.v')}
    LIMIT 1) n ON true`;

/**
 * The steps of a batch being inserted, for the insert statement (db/repositories/ingest.repository.ts), which defines
 * `new_batch` (the batch's rows: id, device_id, ts, data, location) and `latest` (LATEST_MESSAGE). Defines `new_steps`
 * (id, vehicle_id, meters, source), one per row:
 * - each row's predecessor is the later of the batch's previous row of its device (`lag`) and the device's latest
 *   stored message before it: for a row after the device's newest stored message, that message (read once per
 *   device, by `latest`); for a late row, looked up (gated per row: a one-time filter, no index read for the others).
 *   So an in-order batch reads each device's newest message and nothing else of the history;
 * - the vehicle is the one in force at the row's time (vehicleAt): read once per device, at its first row, unless an
 *   association starts within the device's rows (then per row);
 * - a row the insert then skips (a frame stored before: a re-send) was still its successor's `lag`: the distance
 *   statement re-measures that successor (checking each row against the stored frames here cost more than the step).
 * Issue 13: the steps were a `distance_steps` row per message, written by the distance statement after the insert;
 * on the message row they cost the insert three columns. The vehicle is the one the insert sees; the distance
 * statement corrects it where the batch's own VIN frames changed it (the vehicles stage runs after the insert).
 */
export const NEW_STEPS_CTES = `
  new_rows AS (
    SELECT b.id, b.device_id, b.ts, b.location, ${VEHICLE_SPEED('b')} AS v,
      l.latest AS after, l.latest_id, l.latest_loc, l.latest_v
    FROM new_batch b LEFT JOIN latest l ON l.device_id = b.device_id),
  new_ordered AS (
    SELECT f.*, lag(f.id) OVER w AS l_id, lag(f.ts) OVER w AS l_ts, lag(f.location) OVER w AS l_loc, lag(f.v) OVER w AS l_v
    FROM new_rows f WINDOW w AS (PARTITION BY f.device_id ORDER BY f.ts, f.id)),
  new_near AS (
    SELECT o.*, p.id AS s_id, p.ts AS s_ts, p.location AS s_loc, p.v AS s_v
    FROM new_ordered o LEFT JOIN LATERAL (
      SELECT o.latest_id AS id, o.after AS ts, o.latest_loc AS location, o.latest_v AS v WHERE (o.ts, o.id) > (o.after, o.latest_id)
      UNION ALL
      (${PREDECESSOR('o', '(o.ts, o.id) < (o.after, o.latest_id)').trim()})) p ON true),
  -- MATERIALIZED: inlined into new_pairs' join, its two lookups ran once per row instead of once per device
  new_vehicles AS MATERIALIZED (
    SELECT d.device_id, ${vehicleAt('d.device_id', 'd.first')} AS vehicle_id,
      EXISTS (SELECT 1 FROM device_vehicles dv WHERE dv.device_id = d.device_id AND dv.started_at > d.first AND dv.started_at <= d.last)
        AS changes
    FROM (SELECT device_id, min(ts) AS first, max(ts) AS last FROM new_batch GROUP BY device_id) d),
  new_pairs AS (
    SELECT n.id, n.device_id, n.ts, n.location AS loc, n.v,
      CASE WHEN nv.changes THEN ${vehicleAt('n.device_id', 'n.ts')} ELSE nv.vehicle_id END AS vehicle_id,
      CASE WHEN n.by_lag THEN n.l_ts ELSE n.s_ts END AS p_ts, CASE WHEN n.by_lag THEN n.l_loc ELSE n.s_loc END AS p_loc,
      CASE WHEN n.by_lag THEN n.l_v ELSE n.s_v END AS p_v
    FROM (SELECT nn.*, nn.l_id IS NOT NULL AND (nn.s_id IS NULL OR (nn.l_ts, nn.l_id) > (nn.s_ts, nn.s_id)) AS by_lag
          FROM new_near nn) n
    JOIN new_vehicles nv ON nv.device_id = n.device_id),
  ${measure('new_')}`;

/**
 * The distance statement's first half: the batch's stored steps, and the re-measured steps its late and skipped
 * frames changed. `fresh` holds the batch's new messages as bound (their steps as stored, the vehicle the stages gave
 * each, whether it is late: at or before the device's newest timestamp before the batch); `vehicles_in` the new
 * messages whose stored vehicle the batch's VIN frames changed (`moved` corrects them); `skipped_in` the frames the
 * insert skipped (stored before). A late message splits its successor's step, and a skipped frame was its
 * successor's predecessor when the insert measured it: `successors` are, for each late message, the next stored
 * message of its device that is not new, and for each skipped frame the next message, new or not (through the
 * (device_id, ts, id) index, with its stored step), re-measured against its predecessor now (`succ_steps`, stored by
 * `restepped`). `delta` holds the changes of vehicle totals (per vehicle, device and time: the new steps not
 * re-measured, the re-measured ones, less the old steps of those that were not new), `totals` the new totals,
 * `readings` the readings whose anchor moved, with their new value: a late frame before a reading leaves the
 * estimate from it. Data-modifying CTEs run to completion whether or not the final SELECT reads them; updates find
 * their rows by key (`= ANY (ARRAY(…))`, so a generic plan reads them through the primary key whatever it estimates).
 * Bindings (stepBindings in db/distance/triggers.sql.ts): per new message id, device_id, ts, meters, source,
 * vehicle_id, late; per moved one id, vehicle_id, device_id, ts; per skipped frame device_id, ts, id.
 */
/**
 * Index conditions on messages `m` for the rows of `keys` (a CTE with device_id and ts): one index probe per device and
 * time among them (messages have no index on id alone).
 */
const BY_KEYS = (m: string, keys: string) => `${m}.device_id = ANY (ARRAY(SELECT DISTINCT device_id FROM ${keys}))
      AND ${m}.ts = ANY (ARRAY(SELECT DISTINCT ts FROM ${keys}))`;

export const STEP_CTES = `
  fresh AS (
    SELECT * FROM unnest(?::uuid[], ?::uuid[], ?::timestamptz[], ?::float8[], ?::text[], ?::uuid[], ?::bool[])
      AS n(id, device_id, ts, meters, source, vehicle_id, late)),
  vehicles_in AS (SELECT * FROM unnest(?::uuid[], ?::uuid[], ?::uuid[], ?::timestamptz[]) AS v(id, vehicle_id, device_id, ts)),
  skipped_in AS (SELECT * FROM unnest(?::uuid[], ?::timestamptz[], ?::uuid[]) AS k(device_id, ts, id)),
  successors AS (
    SELECT DISTINCT ON (s.id) s.*, EXISTS (SELECT 1 FROM fresh f2 WHERE f2.id = s.id) AS is_new
    FROM (SELECT f.device_id, f.ts, f.id, true AS late FROM fresh f WHERE f.late
          UNION ALL SELECT k.device_id, k.ts, k.id, false FROM skipped_in k) f
    CROSS JOIN LATERAL (
      SELECT m.id, m.device_id, m.ts, m.location, ${VEHICLE_SPEED('m')} AS v, m.step_m AS old_m, m.step_source AS old_source,
        m.step_vehicle_id AS old_vehicle, f.late FROM messages m
      WHERE m.device_id = f.device_id AND m.ts >= f.ts AND (m.ts, m.id) > (f.ts, f.id)
      ORDER BY m.ts, m.id LIMIT 1) s
    ORDER BY s.id, s.late),
  remeasured AS (SELECT * FROM successors WHERE NOT (late AND is_new)),
  succ_pairs AS (
    SELECT s.id, s.device_id, s.ts, s.location AS loc, s.v, ${vehicleAt('s.device_id', 's.ts')} AS vehicle_id,
      p.ts AS p_ts, p.location AS p_loc, p.v AS p_v
    FROM remeasured s LEFT JOIN LATERAL (${PREDECESSOR('s')}) p ON true),
  ${measure('succ_')},
  -- each gated by whether it has rows (an InitPlan: without, nothing below it runs), and found through the
  -- (device_id, ts, id) index by arrays of the rows' devices and times: a generic plan made while messages was small (a
  -- connection's first batch on a new database) scanned the table for \`moved\`'s rows (none nearly always), and kept
  -- scanning it as it grew
  restepped AS (
    UPDATE messages m SET step_m = s.meters, step_source = s.source, step_vehicle_id = s.vehicle_id FROM succ_steps s
    WHERE EXISTS (SELECT 1 FROM succ_steps) AND ${BY_KEYS('m', 'succ_steps')} AND m.id = s.id AND m.device_id = s.device_id AND m.ts = s.ts
    RETURNING m.id),
  moved AS (
    UPDATE messages m SET step_vehicle_id = v.vehicle_id FROM vehicles_in v
    WHERE EXISTS (SELECT 1 FROM vehicles_in) AND ${BY_KEYS('m', 'vehicles_in')} AND m.id = v.id AND m.device_id = v.device_id AND m.ts = v.ts
      AND NOT EXISTS (SELECT 1 FROM succ_steps s WHERE s.id = v.id)
    RETURNING m.id),
  delta AS (
    SELECT vehicle_id, device_id, ts, sum(meters) AS meters,
      sum(meters) FILTER (WHERE source = 'gps') AS gps, sum(meters) FILTER (WHERE source = 'vss') AS vss
    FROM (SELECT f.vehicle_id, f.device_id, f.ts, f.meters, f.source FROM fresh f
            WHERE NOT EXISTS (SELECT 1 FROM succ_steps s WHERE s.id = f.id)
          UNION ALL SELECT vehicle_id, device_id, ts, meters, source FROM succ_steps
          UNION ALL SELECT old_vehicle, device_id, ts, -old_m, old_source FROM remeasured WHERE NOT is_new AND old_m IS NOT NULL) x
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
