// Trip segmentation and running statistics (docs/concepts/trips-and-report-cards.md), set-based per ingest batch:
// CONTINUE advances the open trips that simply continue, SEGMENT every other device of the batch. The rules are in
// SEGMENT below; the formulas in formulas.ts.
import { vehicleAt } from '../vehicle-at.sql.js';
import { SPHEROID_M, VEHICLE_SPEED } from '../distance/steps.sql.js';
import { STEP } from '../distance/model.js';
import { IMPACT_G } from '../collisions/collisions.sql.js';
import type { SqlStatement } from '../fused.js';
import { numAt } from '../message-data.sql.js';

/**
 * Per device of the batch, the span to (re)derive:
 * - in order (the batch's messages are not older than the device's newest stored one; one at the same
 *   millisecond is new, told apart by its id), with an open trip: the messages after the trip's last counted one (`last_ts`), continuing the
 *   trip's sums from what it carries (its last location, speed sample and hard-event state: `ctx`); SEGMENT also puts
 *   the trip's last counted message before them as a row 0, so that sessions and islands see it;
 * - in order, no open trip: the batch's messages, with the message before them as context (gap, shutdown);
 * - late (a message before the device's previous newest): from the start of the first trip that
 *   ends within a gap of the late message (or the late message itself), every trip from there on re-derived
 *   from scratch; trips no longer implied are deleted with their events (report cards cascade).
 *
 * Sessions: a startup, the message after a shutdown, or a reporting gap (> gap) begins one. A session opened by
 * a startup is one trip (ignition) up to its last message; it ends with the shutdown, or with the next session
 * (end reason gap or startup). In other sessions (no ignition) a trip is an island of motion (speed ≥ motion):
 * moving samples less than `still` apart, from the first moving sample to the first sample at rest after the
 * last one; it ends once a sample shows no motion for `still` (stationary), or with the session. An open
 * motion trip counts its samples up to the last moving one (later samples are re-read by the next batch).
 */
const PARAMS = `
  p AS (SELECT make_interval(secs => ?::float8 / 1000) AS gap, make_interval(secs => ?::float8 / 1000) AS still,
    ?::float8 AS motion, ?::float8 AS stopped, ?::float8 AS accel, ?::float8 AS brake, ?::float8 AS hard_min,
    ?::float8 AS speeding, ?::float8 AS impact)`;

/**
 * Whether message `m` is an impact (docs/concepts/diagnostics-and-collisions.md): it reports a collision, or its
 * accelerometer window reaches `p`'s impact threshold (g; the collisions stage's collisionImpactG, measured alike). An
 * impact is never a hard brake or acceleration (MEMBERS), whether or not the collisions stage makes it a collision.
 */
/** What a trip reads of each message (`m` a messages row): speed, load, fuel, accelerometer, impact. */
const SAMPLE_COLUMNS = (m: string) => `coalesce(${VEHICLE_SPEED(m)}, ${numAt(m, 'gps.speed')}) AS spd,
      ${numAt(m, 'calculatedLoadValue')} AS load, ${numAt(m, 'engineFuelRate')} AS fuel_rate,
      ${numAt(m, 'massAirFlow')} AS maf, coalesce((${m}.txt ->> 'fuelType') ILIKE '%diesel%', false) AS diesel,
      ${numAt(m, 'accel.minX')} AS ax_min, ${numAt(m, 'accel.maxX')} AS ax_max, ${IMPACT(m)} AS impact`;
const IMPACT = (m: string) => `coalesce(${m}.extra -> 'collision' IS NOT NULL OR ${IMPACT_G(m)} >= ${P('impact')}, false)`;

/**
 * A parameter of `p`, as a scalar subquery: evaluated once per statement (an InitPlan), where joining `p` to the rows
 * put a join node and a projection of every row under each window that used it.
 */
const P = (name: string) => `(SELECT ${name} FROM p)`;

/**
 * The boundary rules, shared by SEGMENT (which derives sessions and islands from them) and CONTINUE (which
 * checks that none applies): a reporting gap between two samples; a moving sample more than `still` after the
 * previous moving one begins a new motion island; a motion trip ends once its last sample is `still` past its
 * last moving one (stationary).
 */
const IS_GAP = (interval: string) => `${interval} > ${P('gap')}`;
const IS_NEW_ISLAND = (ts: string, prevMovingTs: string) => `${ts} - ${prevMovingTs} > ${P('still')}`;
const IS_STATIONARY = (lastTs: string, lastMovingTs: string) => `${lastTs} > ${lastMovingTs} + ${P('still')}`;

/** Each device's open trip, newest first: one index probe per device of `batch`. */
const OPEN_TRIP = `SELECT t.* FROM batch b CROSS JOIN LATERAL (SELECT * FROM trips t WHERE t.device_id = b.device_id
    AND t.stop_ts IS NULL ORDER BY t.start_ts DESC LIMIT 1) t`;

const SPAN = `
  batch AS (SELECT * FROM unnest(?::uuid[], ?::timestamptz[], ?::boolean[], ?::boolean[]) AS b(device_id, first_ts, late, may_open)),
  batch_ids AS (SELECT ?::uuid[] AS ids), ${PARAMS},
  -- each device's open trip, newest first: one index probe per device (a join read every trip of the device,
  -- open or not)
  cont AS (${OPEN_TRIP} WHERE NOT b.late),
  span AS (
    SELECT b.device_id, b.late, c.id AS cont_id,
      CASE WHEN b.late THEN least(b.first_ts, (SELECT min(t.start_ts) FROM trips t WHERE t.device_id = b.device_id
        AND coalesce(t.stop_ts, 'infinity'::timestamptz) >= b.first_ts - ${P('gap')})) ELSE coalesce(c.last_ts, b.first_ts) END AS from_ts
    FROM batch b LEFT JOIN cont c ON c.device_id = b.device_id
    -- an in-order batch without an open trip, a startup or a moving sample can make no trip: its messages are not read
    WHERE b.late OR b.may_open OR c.id IS NOT NULL),
  ctx AS (
    SELECT s.*, coalesce(c.last_ts, pm.ts) AS v_ts,
      CASE WHEN c.start_reason = 'startup' THEN 'startup' WHEN pm.kind = 'shutdown' THEN 'shutdown' ELSE 'telemetry' END AS v_kind,
      c.last_location AS v_loc, c.last_speed AS v_spd, c.last_speed_ts AS v_spd_ts, c.last_hard AS v_hard,
      coalesce(c.start_reason = 'motion', false) AS v_mv
    FROM span s LEFT JOIN cont c ON c.id = s.cont_id
    LEFT JOIN LATERAL (SELECT m.ts, m.kind FROM messages m WHERE s.cont_id IS NULL AND m.device_id = s.device_id
      AND m.ts < s.from_ts ORDER BY m.ts DESC LIMIT 1) pm ON true)`;

/**
 * The span's messages, numbered from 1 in time order per device (`rn`), and with `virtual`, each device's row 0 from
 * `ctx`: the open trip's last counted message, or the message before the span. Row 0 takes part in finding sessions,
 * islands and segments; the members of a segment (MEMBERS) are real messages only, and take what a continued trip
 * carries (last location, speed sample, hard-event state) from `ctx`. `carried`: more columns of the row (`m`) or of
 * its context (`x`), kept on every row.
 */
const ROWS0 = (virtual: boolean, carried: string[] = [], numbered = true) => `
  rows0 AS (
    -- kind: null stands for telemetry in storage (migration 035); named here, so that no comparison below meets a null
    SELECT x.device_id, m.id, m.ts, coalesce(m.kind, 'telemetry') AS kind, m.location,${carried.map((c) => ` ${c},`).join('')}
      -- the vehicle speed as the distance steps read it, else the GPS speed
      ${SAMPLE_COLUMNS('m')},
      false AS virt, NULL::boolean AS v_mv${numbered ? `,
      row_number() OVER (PARTITION BY x.device_id ORDER BY m.ts, m.received_at, m.id) AS rn` : ''}
    FROM ctx x
    -- per device through messages_device_ts_id (OFFSET 0 keeps the planner from turning it into a scan of the table)
    CROSS JOIN LATERAL (SELECT * FROM messages mm WHERE mm.device_id = x.device_id AND mm.ts >= x.from_ts OFFSET 0) m
    -- a message at from_ts is new if it is the batch's: looked up in a hash of the batch's ids built once (hashed
    -- SubPlan), where \`= ANY (ids)\` compared it with every id of the batch
    WHERE m.ts > x.from_ts OR x.late OR m.id IN (SELECT unnest(ids) FROM batch_ids)${virtual ? `
    UNION ALL
    SELECT x.device_id, NULL, x.v_ts, x.v_kind, NULL, NULL, NULL, NULL, NULL, false, NULL, NULL, NULL, true, x.v_mv, 0
    FROM ctx x WHERE x.v_ts IS NOT NULL` : ''})`;

/** Sessions, motion islands and segments of the span's rows. */
const ROWS = `${ROWS0(true)},
  rows1 AS (
    SELECT r.*, coalesce(r.v_mv, r.spd >= ${P('motion')}, false) AS mv,
      CASE WHEN ${IS_GAP('r.ts - lag(r.ts) OVER w')} THEN 'gap'
        WHEN r.kind = 'startup' THEN 'startup'
        WHEN lag(r.kind) OVER w = 'shutdown' THEN 'shutdown' END AS brk
    FROM rows0 r WINDOW w AS (PARTITION BY r.device_id ORDER BY r.rn)),
  rows2 AS (SELECT r.*, count(r.brk) OVER (PARTITION BY r.device_id ORDER BY r.rn) AS sess FROM rows1 r),
  sessions AS (
    SELECT s.*, lead(s.open_brk) OVER (PARTITION BY s.device_id ORDER BY s.sess) AS next_brk,
      lead(s.sess) OVER (PARTITION BY s.device_id ORDER BY s.sess) IS NOT NULL AS has_next
    FROM (SELECT device_id, sess, max(ts) AS sess_last_ts, (array_agg(kind ORDER BY rn))[1] AS first_kind,
      (array_agg(kind ORDER BY rn DESC))[1] AS last_kind,
      (array_agg(brk ORDER BY rn))[1] AS open_brk FROM rows2 GROUP BY device_id, sess) s),
  rows3 AS (
    SELECT r.*, max(CASE WHEN r.mv THEN r.ts END) OVER (PARTITION BY r.device_id, r.sess ORDER BY r.rn
      ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_mv_ts
    FROM rows2 r),
  rows4 AS (
    SELECT r.*, s.first_kind = 'startup' AS ignition,
      CASE WHEN s.first_kind = 'startup' THEN 0 ELSE count(CASE WHEN r.mv AND (r.prev_mv_ts IS NULL OR ${IS_NEW_ISLAND('r.ts', 'r.prev_mv_ts')})
        THEN 1 END) OVER (PARTITION BY r.device_id, r.sess ORDER BY r.rn) END AS seg
    FROM rows3 r JOIN sessions s ON s.device_id = r.device_id AND s.sess = r.sess),
  segs AS (
    SELECT g.*, s.sess_last_ts, s.has_next, s.next_brk, s.last_kind AS sess_last_kind,
      CASE WHEN g.ignition THEN g.last_row_ts ELSE coalesce(g.rest_ts, g.last_mv_ts) END AS end_ts,
      CASE WHEN g.ignition AND g.last_kind = 'shutdown' THEN 'shutdown'
        WHEN NOT g.ignition AND ${IS_STATIONARY('s.sess_last_ts', 'g.last_mv_ts')} THEN 'stationary'
        WHEN s.has_next THEN s.next_brk WHEN s.last_kind = 'shutdown' THEN 'shutdown' END AS end_reason
    FROM (SELECT r.device_id, r.sess, r.seg, bool_or(r.ignition) AS ignition, bool_or(r.virt) AS is_cont,
        min(r.ts) AS first_ts, max(r.ts) AS last_row_ts, max(CASE WHEN r.mv THEN r.ts END) AS last_mv_ts,
        (array_agg(r.kind ORDER BY r.rn DESC))[1] AS last_kind,
        -- the first sample after the segment's last moving one (a motion trip ends there)
        min(r.ts) FILTER (WHERE r.ts > r.seg_last_mv_ts) AS rest_ts
      FROM (SELECT r.*, max(CASE WHEN r.mv THEN r.ts END) OVER (PARTITION BY r.device_id, r.sess, r.seg) AS seg_last_mv_ts
        FROM rows4 r WHERE r.ignition OR r.seg > 0) r
      GROUP BY r.device_id, r.sess, r.seg) g
    JOIN sessions s ON s.device_id = g.device_id AND s.sess = g.sess)`;

/**
 * Each segment's messages up to its end (an open motion trip: up to its last moving sample), with per-row facts.
 * `rowsOfSegs`: the rows `r` (with sess and seg) joined to their segment `g` of segs and, for a segment that continues
 * an open trip, to `k` of ctx (what the trip carries: v_ts, v_spd, v_spd_ts, v_loc, v_hard; null for other
 * segments); `part`: the columns a segment's rows share (its partition). Options: `seg`, the alias that gives the
 * segment's end (end_reason, ignition, last_mv_ts, end_ts: `g`, or the rows themselves in CONTINUE); `order`, the
 * windows' order (`rn`, or the columns rn numbers the rows by, so that rows already in that order are not sorted);
 * `extra`, more columns of `r` kept on the rows. One sort: every window is over the segment's rows in `rn` order. The
 * previous speed sample and the previous location are read by offset (`lag(v, rn - rn of the previous row that has
 * one)`): a segment's rows have consecutive `rn` (a run of a device's rows, cut after its end), so the offset is their
 * distance: a window partition per "has a speed" and per "has a location" would cost two more sorts of the rows,
 * aggregates ordered by rn a sort per segment each, and the trip's carried values as a row 0 of every continued
 * segment a large share of the continuation statement when devices send few messages a batch. The windows of one level
 * share one frame (the rows before): the previous row's time is the latest time before it (`ts` rises with `rn`), the
 * first location the one with none before it, so that a level is one pass over its rows; a second frame was a second
 * WindowAgg, the rows formed into another tuplestore (see docs/development/performance.md).
 */
const MEMBERS = (rowsOfSegs: string, part: string[], carried = 'k', { seg = 'g', order = ['rn'], extra = [] as string[] } = {}) => {
  const w = (a: string) => `w AS (PARTITION BY ${part.map((c) => `${a}.${c}`).join(', ')} ORDER BY ${order.map((c) => `${a}.${c}`).join(', ')})`;
  return `
  mem AS (
    SELECT r.device_id, r.sess, r.seg, r.rn, r.ts, r.mv, r.spd, r.location, r.load, r.fuel_rate, r.maf, r.diesel, r.ax_min, r.ax_max, r.impact,${extra.map((c) => ` r.${c},`).join('')}
      ${carried}.v_spd AS c_spd, CASE WHEN ${carried}.v_spd IS NOT NULL THEN ${carried}.v_spd_ts END AS c_spd_ts, ${carried}.v_loc AS c_loc,
      ${carried}.v_hard AS c_hard, coalesce(max(r.ts) OVER wp, ${carried}.v_ts) AS prev_ts, lead(r.rn) OVER wp IS NULL AS is_last,
      max(r.rn) FILTER (WHERE r.spd IS NOT NULL) OVER wp AS spd_rn, max(r.rn) FILTER (WHERE r.location IS NOT NULL) OVER wp AS loc_rn
    FROM ${rowsOfSegs}
    WHERE NOT r.virt AND r.ts <= CASE WHEN ${seg}.end_reason IS NULL AND NOT ${seg}.ignition THEN ${seg}.last_mv_ts ELSE ${seg}.end_ts END
    WINDOW ${w('r')}, wp AS (w ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)),
  -- the latest speed sample (value, time) and location before each row: in the segment, else what the trip carries
  mem2 AS (
    SELECT m.*, CASE WHEN m.spd_rn IS NULL THEN m.c_spd ELSE lag(m.spd, (m.rn - m.spd_rn)::int) OVER w END AS spd_before,
      CASE WHEN m.spd_rn IS NULL THEN m.c_spd_ts ELSE lag(m.ts, (m.rn - m.spd_rn)::int) OVER w END AS spd_ts_before,
      CASE WHEN m.loc_rn IS NULL THEN m.c_loc ELSE lag(m.location, (m.rn - m.loc_rn)::int) OVER w END AS loc_before
    FROM mem m WINDOW ${w('m')}),
  -- seconds between timestamps as date_part('epoch', …), float8: extract(epoch …) is numeric (PostgreSQL 14 on), cast to
  -- float8 where it meets the speeds: the same value, for more work a row
  mem3 AS (
    SELECT m.*, x.prev_spd, x.prev_spd_ts,
      CASE WHEN m.impact THEN 'impact'
        WHEN greatest(m.spd, x.prev_spd) > ${P('hard_min')} AND (m.ax_min <= -${P('brake')} OR x.dvdt <= -${P('brake')}) THEN 'brake'
        WHEN greatest(m.spd, x.prev_spd) > ${P('hard_min')} AND (m.ax_max >= ${P('accel')} OR x.dvdt >= ${P('accel')}) THEN 'accel' END AS hard,
      date_part('epoch', m.ts - m.prev_ts) AS dt_s
    FROM mem2 m CROSS JOIN LATERAL (
      SELECT CASE WHEN m.spd IS NOT NULL THEN m.spd_before END AS prev_spd, CASE WHEN m.spd IS NOT NULL THEN m.spd_ts_before END AS prev_spd_ts,
        CASE WHEN m.spd IS NOT NULL AND m.ts > m.spd_ts_before
          THEN (m.spd - m.spd_before) / 3.6 / date_part('epoch', m.ts - m.spd_ts_before) END AS dvdt) x),
  mem4 AS (
    SELECT m.*, m.hard IS NOT NULL AND coalesce(lag(m.hard, 1, m.c_hard) OVER w NOT IN (m.hard, 'impact'), true) AS hard_new
    FROM mem3 m WINDOW ${w('m')})`;
};

/** What MERGED reads of a trip's segment: SEGMENT's segs `g`. */
interface SegmentOf { device_id: string; first_ts: string; end_reason: string; end_ts: string; ignition: string }
const SEG: SegmentOf = { device_id: 'g.device_id', first_ts: 'g.first_ts', end_reason: 'g.end_reason', end_ts: 'g.end_ts', ignition: 'g.ignition' };

/**
 * A trip's columns from its segment `g` (SegmentOf) and the segment's sums `s` (sums; null for a continued segment
 * without members) added to what the trip `c` carried (a continued trip's row; null for a new trip), as [column,
 * expression]: SEGMENT's `final` (c: cont) and CONTINUE's UPDATE (c: the updated row itself) compute a trip alike.
 */
const MERGED = (c: string, g: SegmentOf): [string, string][] => [
  ['vehicle_id', `coalesce(${c}.vehicle_id, ${vehicleAt(g.device_id, g.first_ts)})`],
  ['stop_ts', `CASE WHEN ${g.end_reason} IS NOT NULL THEN ${g.end_ts} END`],
  ['last_ts', `coalesce(s.last_ts, ${c}.last_ts)`],
  ['start_reason', `coalesce(${c}.start_reason, CASE WHEN ${g.ignition} THEN 'startup' ELSE 'motion' END)`],
  ['end_reason', g.end_reason],
  ['start_point', `coalesce(${c}.start_point, s.first_location)`],
  ['stop_point', `coalesce(s.last_location, ${c}.last_location, ${c}.stop_point)`],
  ...['message_count', 'location_count', 'gps_m', 'vss_m', 'speed_n', 'moving_n', 'moving_sum', 'moving_sumsq', 'load_n', 'load_sum',
    'fuel_rate_l', 'air_g', 'fuel_n', 'hard_accel', 'hard_brake', 'stop_count', 'speeding_ms']
    .map((col): [string, string] => [col, `coalesce(${c}.${col}, 0) + coalesce(s.${col}, 0)`]),
  ['max_speed', `greatest(${c}.max_speed, s.max_speed)`],
  ['diesel', `coalesce(${c}.diesel, false) OR coalesce(s.diesel, false)`],
  ['last_location', `coalesce(s.last_location, ${c}.last_location)`],
  ['last_speed', `coalesce(s.last_speed, ${c}.last_speed)`],
  ['last_speed_ts', `coalesce(s.last_speed_ts, ${c}.last_speed_ts)`],
  ['last_moving_ts', `coalesce(s.last_moving_ts, ${c}.last_moving_ts)`],
  ['last_hard', `CASE WHEN s.device_id IS NULL THEN ${c}.last_hard ELSE s.last_hard END`],
  ['last_stopped', `coalesce(coalesce(s.last_speed, ${c}.last_speed) < ${P('stopped')}, false)`],
];

/**
 * The segments' sums, added to the continued trip's. A continued segment may have no member (an open motion trip
 * whose new messages are all at rest): its trip keeps what it carries.
 */
const SUMS = (keys = ['device_id', 'sess', 'seg'], also: string[] = []) => `
  sums AS MATERIALIZED (
    SELECT ${keys.map((k) => `m.${k}`).join(', ')},${also.map((a) => ` ${a},`).join('')}
      count(*) AS message_count, count(m.location) AS location_count,
      coalesce(sum(${SPHEROID_M('m.location', 'm.loc_before')}), 0) AS gps_m,
      coalesce(sum(CASE WHEN m.prev_spd IS NULL THEN NULL WHEN date_part('epoch', m.ts - m.prev_spd_ts) <= ${STEP.VSS_MAX_GAP_S}
        THEN (m.spd + m.prev_spd) / 2 / 3.6 * date_part('epoch', m.ts - m.prev_spd_ts)
        ELSE ${SPHEROID_M('m.location', 'm.loc_before')} END), 0) AS vss_m,
      count(m.spd) AS speed_n, max(m.spd) AS max_speed,
      count(*) FILTER (WHERE m.spd > 0) AS moving_n, coalesce(sum(m.spd) FILTER (WHERE m.spd > 0), 0) AS moving_sum,
      coalesce(sum(m.spd * m.spd) FILTER (WHERE m.spd > 0), 0) AS moving_sumsq,
      count(m.load) AS load_n, coalesce(sum(m.load), 0) AS load_sum,
      coalesce(sum(m.fuel_rate * coalesce(m.dt_s, 0) / 3600), 0) AS fuel_rate_l,
      coalesce(sum(m.maf * coalesce(m.dt_s, 0)) FILTER (WHERE m.fuel_rate IS NULL), 0) AS air_g,
      count(*) FILTER (WHERE m.fuel_rate IS NOT NULL OR m.maf IS NOT NULL) AS fuel_n,
      bool_or(m.diesel) AS diesel,
      count(*) FILTER (WHERE m.hard_new AND m.hard = 'accel') AS hard_accel,
      count(*) FILTER (WHERE m.hard_new AND m.hard = 'brake') AS hard_brake,
      count(*) FILTER (WHERE m.spd < ${P('stopped')} AND m.prev_spd >= ${P('stopped')}) AS stop_count,
      coalesce(sum(m.dt_s * 1000) FILTER (WHERE m.spd > ${P('speeding')}), 0) AS speeding_ms,
      -- the first location, and what the segment's last row carries: its latest location, speed sample and hard-event state
      (array_agg(m.location) FILTER (WHERE m.location IS NOT NULL AND m.loc_rn IS NULL))[1] AS first_location,
      (array_agg(coalesce(m.location, m.loc_before)) FILTER (WHERE m.is_last))[1] AS last_location,
      max(coalesce(m.spd, m.spd_before)) FILTER (WHERE m.is_last) AS last_speed,
      max(CASE WHEN m.spd IS NOT NULL THEN m.ts ELSE m.spd_ts_before END) FILTER (WHERE m.is_last) AS last_speed_ts,
      max(m.hard) FILTER (WHERE m.is_last) AS last_hard,
      max(m.ts) AS last_ts, max(m.ts) FILTER (WHERE m.mv) AS last_moving_ts
    FROM mem4 m GROUP BY ${keys.map((k) => `m.${k}`).join(', ')})`;

/** SEGMENT's trips: each segment's, merged with the open trip it continues (MERGED). */
const FINAL = `
  final AS (
    SELECT g.device_id, coalesce(c.id, gen_random_uuid()) AS id, coalesce(c.start_ts, g.first_ts) AS start_ts,
      ${MERGED('c', SEG).map(([col, e]) => `${e} AS ${col}`).join(',\n      ')}
    FROM segs g LEFT JOIN sums s ON s.device_id = g.device_id AND s.sess = g.sess AND s.seg = g.seg
    LEFT JOIN cont c ON g.is_cont AND c.device_id = g.device_id
    -- a segment without members is a continued one (segs: every other starts with a member)
    WHERE s.device_id IS NOT NULL OR c.id IS NOT NULL)`;

const COLUMNS = `id, device_id, vehicle_id, start_ts, stop_ts, last_ts, start_reason, end_reason, start_point, stop_point,
  message_count, location_count, gps_m, vss_m, speed_n, max_speed, moving_n, moving_sum, moving_sumsq, load_n, load_sum,
  fuel_rate_l, air_g, fuel_n, diesel, hard_accel, hard_brake, stop_count, speeding_ms, last_location, last_speed,
  last_speed_ts, last_moving_ts, last_hard, last_stopped`;

/** The columns a recomputation may change (a trip is identified by device and start), set from the proposed row. */
const UPDATES = COLUMNS.split(',').map((c) => c.trim()).filter((c) => !['id', 'device_id', 'start_ts'].includes(c))
  .map((c) => `${c} = EXCLUDED.${c}`).join(', ');

/**
 * One statement: derives the segments of every span, upserts their trips by (device, start) (ids survive a
 * recomputation), deletes the trips of late spans no longer implied and their events. Returns the touched
 * trips (closed: stop_ts set; created: inserted, not updated) and the ids of the deleted ones.
 */
export const SEGMENT = `
  WITH ${SPAN}, ${ROWS}, ${MEMBERS('rows4 r JOIN segs g ON g.device_id = r.device_id AND g.sess = r.sess AND g.seg = r.seg LEFT JOIN ctx k ON g.is_cont AND k.device_id = g.device_id', ['device_id', 'sess', 'seg'])}, ${SUMS()}, ${FINAL},
  upserted AS (
    INSERT INTO trips (${COLUMNS}, touched_at)
    SELECT ${COLUMNS}, now() FROM final
    ON CONFLICT (device_id, start_ts) DO UPDATE SET ${UPDATES}, touched_at = EXCLUDED.touched_at
    RETURNING id, device_id, stop_ts, xmax = 0 AS created),
  removed AS (
    DELETE FROM trips t USING span s
    WHERE s.late AND t.device_id = s.device_id AND t.start_ts >= s.from_ts
      AND NOT EXISTS (SELECT 1 FROM final f WHERE f.device_id = t.device_id AND f.start_ts = t.start_ts)
    RETURNING t.id),
  removed_events AS (DELETE FROM events e USING removed r WHERE e.object_id = r.id RETURNING e.id)
  SELECT u.id, u.device_id, u.stop_ts IS NOT NULL AS closed, u.created, false AS removed FROM upserted u
  UNION ALL
  SELECT r.id, NULL, NULL, NULL, true FROM removed r, (SELECT count(*) FROM removed_events) x`;

/** CONTINUE's `judged`: a device's last moving sample, of its new messages (window `d`) or the motion trip's last one. */
const LAST_MV_TS = 'greatest(max(f.ts) FILTER (WHERE f.mv) OVER d, CASE WHEN f.c_mv THEN f.v_ts END)';

/**
 * The common case in one cheaper statement: devices whose batch is in order and holds no startup or shutdown,
 * and whose open trip continues through it. The sessions, motion islands and segments of SEGMENT are not
 * derived: a device qualifies only where they could not change (no reporting gap; for a motion trip, moving
 * samples less than `still` apart and no stillness of `still` at the end), so its rows are the open trip's
 * segment as SEGMENT would find it, and MEMBERS and SUMS, shared with SEGMENT, advance the trip the same way.
 * Returns the devices it advanced; the others go through SEGMENT (also one whose new rows are all past its motion
 * trip's last moving sample: it has no members, and SEGMENT finds its trip unchanged). Parameters: device ids, the
 * batch's message ids, then those of SEGMENT's `p`. Written as CTEs and a main statement (db/fused.ts): the ingest
 * pipeline runs it in one round trip with the distance statement.
 *
 * One pass of sorting: rows0 numbers each device's rows in (ts, received_at, id) order, and every window after it is
 * in that order (rn's), so its rows stay in it; each CTE has one reader, so none is stored. What qualifies a device
 * is a window over its whole partition (`judged`), not an aggregate joined back to the rows; the sums are keyed by
 * the trip, which the UPDATE reads as the trip carried. As segs (GROUP BY, HAVING) joined to flagged (stored for
 * its two readers) and sorted again, then a final row merged with the trip read from cont, the statement would cost
 * noticeably more (docs/development/performance.md).
 */
export const CONTINUE: SqlStatement = {
  ctes: `
  batch AS (SELECT device_id, false AS late FROM unnest(?::uuid[]) AS b(device_id)),
  batch_ids AS (SELECT ?::uuid[] AS ids), ${PARAMS},
  cont AS (${OPEN_TRIP}),
  ctx AS (
    SELECT c.id AS trip_id, c.device_id, c.last_ts AS from_ts, false AS late, c.last_ts AS v_ts, c.last_location AS v_loc, c.last_speed AS v_spd,
      c.last_speed_ts AS v_spd_ts, c.last_hard AS v_hard, c.start_reason = 'motion' AS v_mv, c.start_reason = 'startup' AS ignition
    FROM cont c),
  ${ROWS0(false, ['m.received_at', 'x.trip_id', 'x.ignition', 'x.v_ts', 'x.v_spd', 'x.v_spd_ts', 'x.v_loc', 'x.v_hard', 'x.v_mv AS c_mv'], false)},
  -- the trip's last counted message stands before the rows (a motion trip's is its last moving sample)
  flagged AS (
    SELECT r.*, row_number() OVER wp AS rn, coalesce(r.spd >= ${P('motion')}, false) AS mv,
      r.ts - coalesce(max(r.ts) OVER wp, r.v_ts) AS dt,
      coalesce(max(CASE WHEN r.spd >= ${P('motion')} THEN r.ts END) OVER wp, CASE WHEN r.c_mv THEN r.v_ts END) AS prev_mv_ts
    FROM rows0 r
    WINDOW wp AS (PARTITION BY r.device_id ORDER BY r.ts, r.received_at, r.id ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)),
  -- the device's one segment (sess 0, seg 0) on each of its rows, and whether it continues: what would make SEGMENT
  -- see a boundary is a reporting gap; in a motion trip a new island (moving samples more than \`still\` apart) or the
  -- island ending (still for \`still\` at the end). A startup or shutdown cannot be among the rows: the caller leaves
  -- out batches holding one, and one stored earlier closed the open trip.
  judged AS (
    SELECT f.*, 0::bigint AS sess, 0::bigint AS seg, NULL::text AS end_reason, max(f.ts) OVER d AS end_ts, ${LAST_MV_TS} AS last_mv_ts,
      NOT bool_or(${IS_GAP('f.dt')}) OVER d AND (f.ignition OR (NOT bool_or(f.mv AND ${IS_NEW_ISLAND('f.ts', 'f.prev_mv_ts')}) OVER d
        AND NOT ${IS_STATIONARY('max(f.ts) OVER d', LAST_MV_TS)})) AS continues
    FROM flagged f
    WINDOW d AS (PARTITION BY f.device_id ORDER BY f.ts, f.received_at, f.id ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)),
  ${MEMBERS('(SELECT * FROM judged j WHERE j.continues) r', ['device_id'], 'r', { seg: 'r', order: ['ts', 'received_at', 'id'], extra: ['received_at', 'id', 'trip_id'] })},
  -- a device's rows share its trip: taken by an aggregate, since grouped by it too the rows were sorted again
  ${SUMS(['device_id'], ['(array_agg(m.trip_id))[1] AS trip_id'])}`,
  // every trip it advances exists (cont): an UPDATE by id, without the speculative insert of an upsert; found by key
  // (\`= ANY (ARRAY(…))\`), so that a generic plan reads them through the primary key whatever it estimates. The
  // trip's segment began at its last counted message (first_ts) and does not end.
  main: `
  UPDATE trips t SET ${MERGED('t', { device_id: 't.device_id', first_ts: 't.last_ts', end_reason: 'NULL::text', end_ts: 'NULL::timestamptz',
    ignition: "t.start_reason = 'startup'" }).map(([col, e]) => `${col} = ${e}`).join(', ')}, touched_at = now()
  FROM sums s WHERE t.id = ANY (ARRAY(SELECT trip_id FROM sums)) AND t.id = s.trip_id
  RETURNING t.device_id`,
  // the devices it advanced, column by column (db/fused.ts): ~200 rows a batch
  columns: ['device_id'],
};

/**
 * Before SEGMENT, for the devices of a batch with late messages (before the device's previous newest): where the
 * re-derivation would start (SEGMENT's `from_ts`: the late message, or the start of the first trip ending within a gap
 * of it) and whether it stays within the bound: from no earlier than `max_age` before the device's newest message, and
 * reading at most `max_n` stored messages (the trips from there on count their messages, then a probe of the index reads
 * at most `max_n` entries). Else the trip whose interior holds every late message (`host`: after its start, before its
 * last counted message, and for a motion trip before its last moving sample, so that no boundary can move; no late
 * message a startup or shutdown; at most `max_n` stored messages among them), for SPLICE. Parameters: per device its
 * id, first and last late message, whether one is a startup or shutdown, its newest timestamp; then gap (ms), max_n,
 * max_age (ms). Reads no message beyond these bounds.
 */
export const LATE_PLAN = `
  WITH late AS (SELECT * FROM unnest(?::uuid[], ?::timestamptz[], ?::timestamptz[], ?::boolean[], ?::timestamptz[])
    AS l(device_id, first_ts, last_ts, ignition, newest)),
  p AS (SELECT make_interval(secs => ?::float8 / 1000) AS gap, ?::int AS max_n, make_interval(secs => ?::float8 / 1000) AS max_age),
  span AS (
    SELECT l.*, least(l.first_ts, (SELECT min(t.start_ts) FROM trips t WHERE t.device_id = l.device_id
      AND coalesce(t.stop_ts, 'infinity'::timestamptz) >= l.first_ts - ${P('gap')})) AS from_ts
    FROM late l)
  SELECT s.device_id,
    CASE WHEN s.from_ts < s.newest - ${P('max_age')} THEN false
      WHEN (SELECT coalesce(sum(t.message_count), 0) FROM trips t WHERE t.device_id = s.device_id AND t.start_ts >= s.from_ts) > ${P('max_n')}
        THEN false
      ELSE NOT EXISTS (SELECT 1 FROM (SELECT 1 FROM messages m WHERE m.device_id = s.device_id AND m.ts >= s.from_ts
        ORDER BY m.ts OFFSET ${P('max_n')} LIMIT 1) x) END AS within,
    h.id AS host_id
  FROM span s LEFT JOIN LATERAL (
    SELECT t.id FROM (SELECT * FROM trips t WHERE t.device_id = s.device_id AND t.start_ts < s.first_ts ORDER BY t.start_ts DESC LIMIT 1) t
    WHERE NOT s.ignition AND s.last_ts < t.last_ts AND (t.start_reason = 'startup' OR s.last_ts < t.last_moving_ts)
      AND NOT EXISTS (SELECT 1 FROM (SELECT 1 FROM messages m WHERE m.device_id = s.device_id AND m.ts >= s.first_ts AND m.ts <= s.last_ts
        ORDER BY m.ts OFFSET ${P('max_n')} LIMIT 1) x)) h ON true`;

/**
 * A late frame's effect on a trip too long to re-derive (LATE_PLAN's `host`), without reading the trip: the trip's
 * messages from `n` before the first late message to `n` after the last one (or to the trip's start and end, when
 * closer) are summed twice by MEMBERS and SUMS, as stored before (version 0: without the batch's messages) and with the
 * late ones (version 1), and the trip's sums move by the difference. What a message adds depends on its predecessors
 * alone (the previous message, speed sample and location, and the previous message's hard-event state), and the late
 * messages cannot move a boundary (LATE_PLAN), so outside the window nothing changes, and the window's first messages
 * add the same to both versions whatever the window does not see before them. Exact when the window sees what the late
 * messages' successors and predecessors need: before them, two speed samples (if they carry a speed) and a location (if
 * they carry one), or the trip's start; after them, a speed sample followed by a message (if they carry a speed), a
 * location (if they carry one) and a message, or the trip's end (whose carried state, last location and speed, is
 * then recomputed, as the start point is from the window at the trip's start). A trip whose window does not is left
 * unchanged (`spliced` false). The map preview is not redrawn. Parameters: per trip its id, device, first and last late
 * message; the batch's message ids; the late ones; `p`'s; `n`. Returns each trip's id and whether it was spliced, and
 * the updated trip's row.
 */
export const SPLICE = `
  WITH host AS MATERIALIZED (
    SELECT t.*, l.first_ts AS l_first, l.last_ts AS l_last
    FROM unnest(?::uuid[], ?::uuid[], ?::timestamptz[], ?::timestamptz[]) AS l(trip_id, device_id, first_ts, last_ts)
    JOIN trips t ON t.id = l.trip_id AND t.device_id = l.device_id),
  batch_ids AS (SELECT ?::uuid[] AS ids), late_ids AS (SELECT ?::uuid[] AS ids), ${PARAMS}, w AS (SELECT ?::int AS n),
  -- the window: the trip's n messages before the first late one, the messages from it to the last one (LATE_PLAN bounds
  -- them), the n after it; \`edge\` tells the first two parts from the last (fewer than n: the trip's start or end)
  win AS (
    SELECT h.id AS trip_id, h.device_id, h.l_first, h.l_last, m.*
    FROM host h CROSS JOIN LATERAL (
      SELECT -1 AS edge, mm.id, mm.ts, mm.received_at, mm.location, mm.num, mm.txt, mm.extra
      FROM (SELECT * FROM messages mm WHERE mm.device_id = h.device_id AND mm.ts < h.l_first AND mm.ts >= h.start_ts
        ORDER BY mm.ts DESC, mm.id DESC LIMIT (SELECT n FROM w)) mm
      UNION ALL
      SELECT 0, mm.id, mm.ts, mm.received_at, mm.location, mm.num, mm.txt, mm.extra
      FROM messages mm WHERE mm.device_id = h.device_id AND mm.ts >= h.l_first AND mm.ts <= h.l_last
      UNION ALL
      SELECT 1, mm.id, mm.ts, mm.received_at, mm.location, mm.num, mm.txt, mm.extra
      FROM (SELECT * FROM messages mm WHERE mm.device_id = h.device_id AND mm.ts > h.l_last AND mm.ts <= h.last_ts
        ORDER BY mm.ts, mm.id LIMIT (SELECT n FROM w)) mm) m),
  rows0 AS (
    SELECT m.device_id, v.ver AS sess, 0 AS seg, m.id, m.ts, m.received_at, m.location,
      ${SAMPLE_COLUMNS('m')},
      m.id IN (SELECT unnest(ids) FROM late_ids) AS is_late, m.l_first, m.l_last, m.edge
    FROM win m CROSS JOIN (VALUES (0), (1)) v(ver)
    -- version 0: the messages stored before the batch; version 1: those and the late ones (not the batch's others)
    WHERE CASE WHEN m.id IN (SELECT unnest(ids) FROM batch_ids) THEN v.ver = 1 AND m.id IN (SELECT unnest(ids) FROM late_ids)
      ELSE true END),
  rows1 AS MATERIALIZED (
    SELECT r.*, row_number() OVER (PARTITION BY r.device_id, r.sess ORDER BY r.ts, r.received_at, r.id) AS rn,
      coalesce(r.spd >= ${P('motion')}, false) AS mv, false AS virt,
      -- what MEMBERS reads of the segment (every row up to the window's end is a member) and of its context (none)
      'spliced'::text AS end_reason, true AS ignition, NULL::timestamptz AS last_mv_ts, 'infinity'::timestamptz AS end_ts,
      NULL::float8 AS v_spd, NULL::timestamptz AS v_spd_ts, NULL::geometry AS v_loc, NULL::text AS v_hard, NULL::timestamptz AS v_ts
    FROM rows0 r),
  ${MEMBERS('rows1 r', ['device_id', 'sess'], 'r', { seg: 'r' })}, ${SUMS(['device_id', 'sess'])},
  -- whether the window sees what the late messages need (above), from version 0's rows and the late ones
  judged AS (
    SELECT h.id AS trip_id, h.device_id, x.from_start, x.to_end,
      (x.from_start OR ((NOT x.late_spd OR x.pre_spd >= 2) AND (NOT (x.late_loc OR x.late_spd) OR x.pre_loc >= 1)))
      AND (x.to_end OR (x.post_n >= 1 AND (NOT x.late_loc OR x.post_loc >= 1)
        AND (NOT x.late_spd OR x.post_last_rn > x.post_first_spd_rn))) AS ok
    FROM host h JOIN (
      SELECT r.device_id, count(*) FILTER (WHERE r.sess = 0 AND r.edge = -1) < (SELECT n FROM w) AS from_start,
        count(*) FILTER (WHERE r.sess = 0 AND r.edge = 1) < (SELECT n FROM w) AS to_end,
        coalesce(bool_or(r.spd IS NOT NULL) FILTER (WHERE r.is_late), false) AS late_spd,
        coalesce(bool_or(r.location IS NOT NULL) FILTER (WHERE r.is_late), false) AS late_loc,
        count(r.spd) FILTER (WHERE r.sess = 0 AND r.ts < r.l_first) AS pre_spd,
        count(r.location) FILTER (WHERE r.sess = 0 AND r.ts < r.l_first) AS pre_loc,
        count(*) FILTER (WHERE r.sess = 0 AND r.ts > r.l_last) AS post_n,
        count(r.location) FILTER (WHERE r.sess = 0 AND r.ts > r.l_last) AS post_loc,
        max(r.rn) FILTER (WHERE r.sess = 0 AND r.ts > r.l_last) AS post_last_rn,
        min(r.rn) FILTER (WHERE r.sess = 0 AND r.ts > r.l_last AND r.spd IS NOT NULL) AS post_first_spd_rn
      FROM rows1 r GROUP BY r.device_id) x ON x.device_id = h.device_id),
  spliced AS (
    UPDATE trips t SET
      ${['message_count', 'location_count', 'gps_m', 'vss_m', 'speed_n', 'moving_n', 'moving_sum', 'moving_sumsq', 'load_n', 'load_sum',
    'fuel_rate_l', 'air_g', 'fuel_n', 'hard_accel', 'hard_brake', 'stop_count', 'speeding_ms']
    .map((c) => `${c} = t.${c} + n.${c} - coalesce(o.${c}, 0)`).join(', ')},
      max_speed = greatest(t.max_speed, n.max_speed), diesel = t.diesel OR coalesce(n.diesel, false),
      last_moving_ts = greatest(t.last_moving_ts, n.last_moving_ts),
      start_point = CASE WHEN j.from_start THEN coalesce(n.first_location, t.start_point) ELSE t.start_point END,
      stop_point = CASE WHEN j.to_end THEN coalesce(n.last_location, t.stop_point) ELSE t.stop_point END,
      last_location = CASE WHEN j.to_end THEN coalesce(n.last_location, t.last_location) ELSE t.last_location END,
      last_speed = CASE WHEN j.to_end THEN coalesce(n.last_speed, t.last_speed) ELSE t.last_speed END,
      last_speed_ts = CASE WHEN j.to_end THEN coalesce(n.last_speed_ts, t.last_speed_ts) ELSE t.last_speed_ts END,
      last_hard = CASE WHEN j.to_end THEN n.last_hard ELSE t.last_hard END,
      last_stopped = CASE WHEN j.to_end THEN coalesce(coalesce(n.last_speed, t.last_speed) < ${P('stopped')}, false) ELSE t.last_stopped END,
      touched_at = now()
    FROM judged j JOIN sums n ON n.device_id = j.device_id AND n.sess = 1 LEFT JOIN sums o ON o.device_id = j.device_id AND o.sess = 0
    WHERE t.id = ANY (ARRAY(SELECT trip_id FROM judged WHERE ok)) AND t.id = j.trip_id AND j.ok
    RETURNING t.*)
  SELECT s.*, true AS spliced FROM spliced s
  UNION ALL
  SELECT h.*, false FROM trips h WHERE h.id = ANY (ARRAY(SELECT trip_id FROM judged WHERE NOT ok))`;
