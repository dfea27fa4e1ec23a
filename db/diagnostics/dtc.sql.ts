// Trouble-code occurrences (docs/concepts/diagnostics-and-collisions.md), set-based per ingest batch: three statements
// for all the devices of a batch, whatever their number. See occurrences() for the model.
import type { Knex } from 'knex';
import { prepared } from '../prepared.js';
import type { DtcInfo } from './dtc-info.js';
import { vehicleAt } from '../vehicle-at.sql.js';
import { lateSpanStart } from '../late-bound.sql.js';

/**
 * Where a device's recomputation starts: its oldest message in the batch that carried `dtcs`; `late`: that message is
 * at or before the device's newest stored one before the batch.
 */
export interface DtcSpan { deviceId: string; from: Date; late: boolean }

/** How far back a late report re-derives (lib/config.ts lateRecomputeMaxMessages, lateRecomputeMaxAgeMs; RECOMPUTE). */
export interface DtcBounds { maxMessages: number; maxAgeMs: number }

const UPSERT_CODES = `
  INSERT INTO dtc_codes (id, number, make, system, subsystem, description)
  SELECT gen_random_uuid(), c.number, c.make, c.system, c.subsystem, c.description
  FROM unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::text[]) AS c(number, make, system, subsystem, description)
  ON CONFLICT (number) DO UPDATE SET description = EXCLUDED.description, make = EXCLUDED.make,
    system = EXCLUDED.system, subsystem = EXCLUDED.subsystem
  WHERE (dtc_codes.description, dtc_codes.make, dtc_codes.system, dtc_codes.subsystem)
    IS DISTINCT FROM (EXCLUDED.description, EXCLUDED.make, EXCLUDED.system, EXCLUDED.subsystem)
  RETURNING id`;

const SPAN = `span AS (SELECT * FROM unnest(?::uuid[], ?::timestamptz[]) AS s(device_id, from_ts))`;

/**
 * An occurrence is a run of consecutive reports (frames with `dtcs`) holding the code: it starts at the
 * first and stops at the next report without it. From each device's span start on, the runs are re-derived
 * from the stored reports (gaps and islands over the report sequence), continuing the occurrences that were
 * on just before the span (report 0). Occurrences are upserted by (device, number, start), so an id survives
 * a recomputation that implies it again; those in the span no longer implied are deleted. A late span starts no
 * earlier than the device's `max_n`-th newest message, nor `max_age` before its newest (lateSpanStart, as the rules' bound,
 * db/rules/evaluate.ts): its reports before that are stored but change no occurrence, and the span re-reads at most
 * `max_n` messages. Returns each span with its start, for EVENT_DIFF.
 */
const RECOMPUTE = `
  WITH asked AS (SELECT * FROM unnest(?::uuid[], ?::timestamptz[], ?::boolean[]) AS s(device_id, from_ts, late)),
  bound AS (SELECT ?::int AS max_n, make_interval(secs => ?::float8 / 1000) AS max_age),
  span AS (
    SELECT s.device_id, CASE WHEN s.late THEN ${lateSpanStart('s.device_id', 's.from_ts', 'b.max_n', 'b.max_age')}
      ELSE s.from_ts END AS from_ts
    FROM asked s, bound b),
  prior AS (
    SELECT o.device_id, o.number, o.start, o.vehicle_id, o.code_id
    FROM dtc_occurrences o JOIN span s ON o.device_id = s.device_id
    WHERE o.start < s.from_ts AND (o.stop IS NULL OR o.stop >= s.from_ts)),
  reports AS (
    SELECT m.device_id, m.id AS message_id, m.ts, m.extra -> 'dtcs' AS codes,
      row_number() OVER (PARTITION BY m.device_id ORDER BY m.ts, m.received_at, m.id) AS i
    -- per device through messages_device_ts_id (OFFSET 0: never a hash over a sequential scan of every message)
    FROM span s CROSS JOIN LATERAL (SELECT * FROM messages mm WHERE mm.device_id = s.device_id AND mm.ts >= s.from_ts OFFSET 0) m
    WHERE jsonb_typeof(m.extra -> 'dtcs') = 'array'),
  hits AS (
    SELECT r.device_id, c.number, r.i FROM reports r CROSS JOIN LATERAL jsonb_array_elements_text(r.codes) AS c(number)
    UNION
    SELECT p.device_id, p.number, 0 FROM prior p),
  islands AS (
    SELECT device_id, number, min(i) AS first_i, max(i) AS last_i
    FROM (SELECT h.*, h.i - row_number() OVER (PARTITION BY h.device_id, h.number ORDER BY h.i) AS grp FROM hits h) x
    GROUP BY device_id, number, grp),
  derived AS (
    SELECT DISTINCT ON (isl.device_id, isl.number, coalesce(p.start, r1.ts))
      isl.device_id, isl.number, coalesce(p.start, r1.ts) AS start, r2.ts AS stop, coalesce(p.code_id, dc.id) AS code_id,
      coalesce(p.vehicle_id, ${vehicleAt('isl.device_id', 'r1.ts')}) AS vehicle_id
    FROM islands isl
    LEFT JOIN prior p ON isl.first_i = 0 AND p.device_id = isl.device_id AND p.number = isl.number
    LEFT JOIN reports r1 ON r1.device_id = isl.device_id AND r1.i = isl.first_i
    LEFT JOIN reports r2 ON r2.device_id = isl.device_id AND r2.i = isl.last_i + 1
    LEFT JOIN dtc_codes dc ON dc.number = isl.number
    ORDER BY isl.device_id, isl.number, coalesce(p.start, r1.ts), isl.first_i DESC),
  upserted AS (
    INSERT INTO dtc_occurrences (id, device_id, vehicle_id, code_id, number, start, stop)
    SELECT gen_random_uuid(), d.device_id, d.vehicle_id, d.code_id, d.number, d.start, d.stop FROM derived d
    ON CONFLICT (device_id, number, start) DO UPDATE SET stop = EXCLUDED.stop
    RETURNING id),
  removed AS (
    DELETE FROM dtc_occurrences o USING span s
    WHERE o.device_id = s.device_id AND o.start >= s.from_ts
      AND NOT EXISTS (SELECT 1 FROM derived d WHERE d.device_id = o.device_id AND d.number = o.number AND d.start = o.start)
    RETURNING o.id)
  SELECT s.device_id, s.from_ts, (SELECT count(*) FROM upserted) AS upserted, (SELECT count(*) FROM removed) AS removed
  FROM span s`;

/**
 * The dtc-on / dtc-off events the occurrences imply from each span start on, against those stored: stored
 * events no longer implied are deleted (with their notifications), implied ones already stored are kept
 * (not notified twice), and the new ones are returned for the pipeline to store.
 */
const EVENT_DIFF = `
  WITH ${SPAN},
  implied AS (
    SELECT o.device_id, o.vehicle_id, 'dtc-on' AS event_type, o.start AS ts, o.code_id
    FROM dtc_occurrences o JOIN span s ON o.device_id = s.device_id AND o.start >= s.from_ts
    UNION ALL
    SELECT o.device_id, o.vehicle_id, 'dtc-off', o.stop, o.code_id
    FROM dtc_occurrences o JOIN span s ON o.device_id = s.device_id AND o.stop >= s.from_ts),
  stored AS (
    SELECT e.id, e.device_id, e.event_type, e.ts, e.meta ->> 'code' AS code_id
    FROM events e JOIN span s ON e.device_id = s.device_id AND e.ts >= s.from_ts
    WHERE e.event_type IN ('dtc-on', 'dtc-off')),
  stale AS (
    DELETE FROM events e USING stored st
    WHERE e.id = st.id AND NOT EXISTS (SELECT 1 FROM implied i WHERE i.device_id = st.device_id
      AND i.event_type = st.event_type AND i.ts = st.ts AND i.code_id::text = st.code_id)
    RETURNING e.id)
  SELECT i.device_id, i.vehicle_id, i.event_type, i.ts, i.code_id FROM implied i
  WHERE NOT EXISTS (SELECT 1 FROM stored st WHERE st.device_id = i.device_id AND st.event_type = i.event_type
    AND st.ts = i.ts AND st.code_id = i.code_id::text)
  ORDER BY i.ts, i.event_type DESC`;

export interface DtcEventRow { deviceId: string; vehicleId: string | null; eventType: 'dtc-on' | 'dtc-off'; ts: Date; codeId: string }

const spanParams = (spans: DtcSpan[]) => [spans.map((s) => s.deviceId), spans.map((s) => s.from.toISOString())];

/** Creates (or refreshes) the code records of the numbers seen: one statement. */
export async function upsertCodes(trx: Knex, infos: DtcInfo[]): Promise<void> {
  if (!infos.length) return;
  const col = (k: keyof DtcInfo) => infos.map((i) => i[k]);
  await prepared(trx, UPSERT_CODES, [col('number'), col('make'), col('system'), col('subsystem'), col('description')]);
}

/** Re-derives the occurrences of every span, then returns the events to add: two statements. */
export async function recomputeOccurrences(trx: Knex, spans: DtcSpan[], b: DtcBounds): Promise<DtcEventRow[]> {
  if (!spans.length) return [];
  const { rows: bounded } = await prepared(trx, RECOMPUTE, [...spanParams(spans), spans.map((s) => s.late), b.maxMessages, b.maxAgeMs]);
  const { rows } = await prepared(trx, EVENT_DIFF, spanParams((bounded as { device_id: string; from_ts: Date | string }[]).map((r) => ({
    deviceId: r.device_id, from: new Date(r.from_ts), late: false }))));
  return (rows as { device_id: string; vehicle_id: string | null; event_type: DtcEventRow['eventType']; ts: Date | string; code_id: string }[]).map((r) => ({
    deviceId: r.device_id, vehicleId: r.vehicle_id, eventType: r.event_type, ts: new Date(r.ts), codeId: r.code_id,
  }));
}
