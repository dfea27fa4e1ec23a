// Collisions (docs/concepts/diagnostics-and-collisions.md), set-based per ingest batch: two statements for all the
// devices of a batch.
import type { Knex } from 'knex';
import { prepared } from '../prepared.js';
import { vehicleAt } from '../vehicle-at.sql.js';
import { lateSpanStart } from '../late-bound.sql.js';
import { hasAccel, numAt } from '../message-data.sql.js';

export interface CollisionOptions {
  /** g (9.80665 m/s²): the accelerometer magnitude that is an impact. */
  impactG: number;
  /** km/h: an accelerometer impact counts only at or above this speed. */
  minSpeedKmh: number;
  /** ms: impact samples closer than this are one collision. */
  mergeMs: number;
  /** How far back a late frame re-derives (lib/config.ts lateRecomputeMaxMessages, lateRecomputeMaxAgeMs; RECOMPUTE). */
  maxMessages: number;
  maxAgeMs: number;
}

/**
 * A device's oldest message in the batch that carried `accel` or `collision`; `late`: the batch holds frames at or
 * before the device's newest stored one.
 */
export interface CollisionBatch { deviceId: string; minTs: Date; late: boolean }

/**
 * Impact magnitude of a frame's accelerometer window `a` (jsonb; m/s², x forward, y left, z up with +1 g at rest):
 * the norm of the largest excursion on each axis, gravity removed from z, in g. The trips stage reads it too, so that an
 * impact is not also a hard brake (db/trips/segment.sql.ts).
 */
export const IMPACT_G = (m: string) => {
  const axis = (a: string) => numAt(m, `accel.${a}`);
  return `sqrt(
    greatest(abs(${axis('maxX')}), abs(${axis('minX')})) ^ 2
  + greatest(abs(${axis('maxY')}), abs(${axis('minY')})) ^ 2
  + greatest(abs(${axis('maxZ')} - 9.80665), abs(${axis('minZ')} - 9.80665)) ^ 2) / 9.80665`;
};

/** MAGNITUDE in JavaScript, for the stage's pre-filter: the same norm of a frame's accelerometer window, in g. */
export function impactMagnitudeG(a: Record<string, number>): number {
  const G = 9.80665;
  const x = Math.max(Math.abs(a.maxX), Math.abs(a.minX));
  const y = Math.max(Math.abs(a.maxY), Math.abs(a.minY));
  const z = Math.max(Math.abs(a.maxZ - G), Math.abs(a.minZ - G));
  return Math.sqrt(x * x + y * y + z * z) / G;
}

/**
 * Candidate samples: the device reported a collision, or the accelerometer magnitude reached the threshold
 * while moving (the frame's vehicleSpeed or GPS speed, else the newest speed of the last 30 s). Candidates
 * less than mergeMs apart are one impact, recorded at its first sample. Recomputation starts at the batch's
 * oldest such message, or at the first sample of a stored impact that may merge with it; impacts are upserted
 * by (device, ts) and those in the span no longer implied are deleted. Returns each device's span start.
 * A late batch's span starts no earlier than the device's `max_n`-th newest message, nor `max_age` before its newest
 * (lateSpanStart, as the rules' bound, db/rules/evaluate.ts): its frames before that are stored but change no
 * collision, and the span re-reads at most `max_n` messages (and the stored impact the bound falls in, from its first
 * sample).
 */
const RECOMPUTE = `
  WITH batch AS (SELECT * FROM unnest(?::uuid[], ?::timestamptz[], ?::boolean[]) AS b(device_id, min_ts, late)),
  params AS (SELECT ?::float8 AS impact_g, ?::float8 AS min_speed, make_interval(secs => ?::float8 / 1000) AS merge,
    ?::int AS max_n, make_interval(secs => ?::float8 / 1000) AS max_age),
  -- materialized: span reads min_ts twice, and the bound is computed once
  bounded AS MATERIALIZED (
    SELECT b.device_id, CASE WHEN b.late THEN ${lateSpanStart('b.device_id', 'b.min_ts', 'p.max_n', 'p.max_age')}
      ELSE b.min_ts END AS min_ts
    FROM batch b, params p),
  span AS (
    SELECT b.device_id, coalesce((SELECT min(c.ts) FROM collisions c, params p WHERE c.device_id = b.device_id
      AND c.ts <= b.min_ts AND c.last_ts >= b.min_ts - p.merge), b.min_ts) AS from_ts
    FROM bounded b),
  samples AS (
    SELECT m.device_id, m.id AS message_id, m.ts, m.location, m.extra -> 'collision' IS NOT NULL AS reported,
      (m.extra -> 'collision' ->> 'peakG')::float8 AS reported_g,
      CASE WHEN ${hasAccel('m')} THEN ${IMPACT_G('m')} END AS g,
      coalesce(${numAt('m', 'vehicleSpeed')}, ${numAt('m', 'gps.speed')}) AS speed
    -- per device through messages_device_ts_id (OFFSET 0: never a hash over a sequential scan of every message)
    FROM span s CROSS JOIN LATERAL (SELECT * FROM messages mm WHERE mm.device_id = s.device_id AND mm.ts >= s.from_ts OFFSET 0) m
    WHERE m.extra -> 'collision' IS NOT NULL OR ${hasAccel('m')}),
  candidates AS (
    SELECT x.* FROM samples x, params p
    WHERE x.reported OR (x.g >= p.impact_g AND coalesce(x.speed, (SELECT coalesce(${numAt('m', 'vehicleSpeed')},
      ${numAt('m', 'gps.speed')}) FROM messages m WHERE m.device_id = x.device_id AND m.ts < x.ts
      AND m.ts >= x.ts - interval '30 seconds' AND (${numAt('m', 'vehicleSpeed')} IS NOT NULL OR ${numAt('m', 'gps.speed')} IS NOT NULL)
      ORDER BY m.ts DESC LIMIT 1)) >= p.min_speed)),
  grouped AS (
    SELECT y.*, sum(CASE WHEN y.prev_ts IS NULL OR y.ts - y.prev_ts >= p.merge THEN 1 ELSE 0 END)
      OVER (PARTITION BY y.device_id ORDER BY y.ts, y.message_id) AS k
    FROM (SELECT c.*, lag(c.ts) OVER (PARTITION BY c.device_id ORDER BY c.ts, c.message_id) AS prev_ts FROM candidates c) y, params p),
  impacts AS (
    SELECT device_id, min(ts) AS ts, max(ts) AS last_ts, (array_agg(message_id ORDER BY ts, message_id))[1] AS message_id,
      (array_agg(location ORDER BY ts, message_id) FILTER (WHERE location IS NOT NULL))[1] AS location,
      max(greatest(g, reported_g)) AS peak_g, bool_or(reported) AS reported
    FROM grouped GROUP BY device_id, k),
  located AS (
    SELECT i.*, coalesce(i.location, (SELECT m.location FROM messages m WHERE m.device_id = i.device_id AND m.ts <= i.ts
        AND m.ts >= i.ts - interval '5 minutes' AND m.location IS NOT NULL ORDER BY m.ts DESC LIMIT 1)) AS point,
      ${vehicleAt('i.device_id', 'i.ts')} AS vehicle_id
    FROM impacts i),
  upserted AS (
    INSERT INTO collisions (id, device_id, vehicle_id, ts, last_ts, message_id, latitude, longitude, peak_g, source)
    SELECT gen_random_uuid(), l.device_id, l.vehicle_id, l.ts, l.last_ts, l.message_id, ST_Y(l.point), ST_X(l.point), l.peak_g,
      CASE WHEN l.reported THEN 'device' ELSE 'accelerometer' END
    FROM located l
    ON CONFLICT (device_id, ts) DO UPDATE SET vehicle_id = EXCLUDED.vehicle_id, last_ts = EXCLUDED.last_ts,
      message_id = EXCLUDED.message_id, latitude = EXCLUDED.latitude, longitude = EXCLUDED.longitude,
      peak_g = EXCLUDED.peak_g, source = EXCLUDED.source
    RETURNING id),
  removed AS (
    DELETE FROM collisions c USING span s
    WHERE c.device_id = s.device_id AND c.ts >= s.from_ts
      AND NOT EXISTS (SELECT 1 FROM located l WHERE l.device_id = c.device_id AND l.ts = c.ts)
    RETURNING c.id)
  SELECT s.device_id, s.from_ts, (SELECT count(*) FROM upserted) AS upserted, (SELECT count(*) FROM removed) AS removed
  FROM span s`;

/** collision events (object vehicle, no meta) implied from each span start on, against those stored. */
const EVENT_DIFF = `
  WITH span AS (SELECT * FROM unnest(?::uuid[], ?::timestamptz[]) AS s(device_id, from_ts)),
  implied AS (SELECT c.device_id, c.vehicle_id, c.ts FROM collisions c JOIN span s ON c.device_id = s.device_id AND c.ts >= s.from_ts),
  stored AS (
    SELECT e.id, e.device_id, e.ts FROM events e JOIN span s ON e.device_id = s.device_id AND e.ts >= s.from_ts
    WHERE e.event_type = 'collision'),
  stale AS (
    DELETE FROM events e USING stored st
    WHERE e.id = st.id AND NOT EXISTS (SELECT 1 FROM implied i WHERE i.device_id = st.device_id AND i.ts = st.ts)
    RETURNING e.id)
  SELECT i.device_id, i.vehicle_id, i.ts FROM implied i
  WHERE NOT EXISTS (SELECT 1 FROM stored st WHERE st.device_id = i.device_id AND st.ts = i.ts)
  ORDER BY i.ts`;

export interface CollisionEventRow { deviceId: string; vehicleId: string | null; ts: Date }

/** A row of RECOMPUTE: a device and where its re-derived span starts. */
interface SpanRow { device_id: string; from_ts: Date | string }

export async function recomputeCollisions(trx: Knex, batches: CollisionBatch[], o: CollisionOptions): Promise<CollisionEventRow[]> {
  if (!batches.length) return [];
  const { rows: spans } = await prepared(trx, RECOMPUTE, [
    batches.map((b) => b.deviceId), batches.map((b) => b.minTs.toISOString()), batches.map((b) => b.late), o.impactG, o.minSpeedKmh,
    o.mergeMs, o.maxMessages, o.maxAgeMs,
  ]);
  const { rows } = await prepared(trx, EVENT_DIFF, [
    (spans as SpanRow[]).map((s) => s.device_id), (spans as SpanRow[]).map((s) => new Date(s.from_ts).toISOString()),
  ]);
  return (rows as { device_id: string; vehicle_id: string | null; ts: Date | string }[])
    .map((r) => ({ deviceId: r.device_id, vehicleId: r.vehicle_id, ts: new Date(r.ts) }));
}
