// What happens once a trip closes (docs/concepts/trips-and-report-cards.md): its map preview, its report card, its
// events. Each is one statement for all the trips a batch (or the sweep) touched.

/** Encoded polyline (precision 5) of a trip's track between two bounds, simplified (formulas.ts PREVIEW_TOLERANCE_DEG). */
export const previewOf = (trip: string, until: string) => `(SELECT ST_AsEncodedPolyline(ST_Simplify(ST_MakeLine(m.location ORDER BY m.ts), ?::float8, true), 5)
    FROM messages m WHERE m.device_id = ${trip}.device_id AND m.ts >= ${trip}.start_ts AND m.ts <= ${until} AND m.location IS NOT NULL)`;

/** Sets the preview of closed trips; returns their rows for the report cards. */
export const FINALIZE = `
  UPDATE trips t SET preview = ${previewOf('t', 't.stop_ts')}
  WHERE t.id = ANY(?::uuid[]) AND t.stop_ts IS NOT NULL
  RETURNING t.*`;

/** Closes the open trips not advanced by any batch for the gap (the device fell silent): one statement. */
export const SWEEP = `
  UPDATE trips SET stop_ts = last_ts, end_reason = 'silent', touched_at = now()
  WHERE stop_ts IS NULL AND touched_at < now() - make_interval(secs => ?::float8 / 1000)
  RETURNING id`;

/** The report cards of the trips FINALIZE returned (their device, vehicle and stop passed along, not re-read). */
export const UPSERT_REPORT_CARDS = `
  INSERT INTO report_cards (id, trip_id, device_id, vehicle_id, ts, grade, score, created_at)
  SELECT gen_random_uuid(), r.trip_id, r.device_id, r.vehicle_id, r.ts, r.grade, r.score, now()
  FROM unnest(?::uuid[], ?::uuid[], ?::uuid[], ?::timestamptz[], ?::text[], ?::float8[])
    AS r(trip_id, device_id, vehicle_id, ts, grade, score)
  ON CONFLICT (trip_id) DO UPDATE SET grade = EXCLUDED.grade, score = EXCLUDED.score, ts = EXCLUDED.ts,
    vehicle_id = EXCLUDED.vehicle_id`;

/**
 * The trip events the touched trips imply (trip-started at the start; trip-stopped and, its
 * statistics being final in the same transaction, trip-completed at the stop; object trip, meta {vehicleId})
 * against those stored: stale ones are deleted, implied ones already stored are kept (never notified twice),
 * the new ones are returned for the pipeline to store.
 */
export const EVENT_DIFF = `
  WITH touched AS (SELECT t.* FROM trips t WHERE t.id = ANY(?::uuid[])),
  implied AS (
    SELECT id, device_id, vehicle_id, 'trip-started' AS event_type, start_ts AS ts FROM touched
    UNION ALL SELECT id, device_id, vehicle_id, 'trip-stopped', stop_ts FROM touched WHERE stop_ts IS NOT NULL
    UNION ALL SELECT id, device_id, vehicle_id, 'trip-completed', stop_ts FROM touched WHERE stop_ts IS NOT NULL),
  stored AS (
    SELECT e.id, e.object_id, e.event_type, e.ts FROM events e JOIN touched t ON e.object_id = t.id
    WHERE e.event_type IN ('trip-started', 'trip-stopped', 'trip-completed')),
  stale AS (
    DELETE FROM events e USING stored st
    WHERE e.id = st.id AND NOT EXISTS (SELECT 1 FROM implied i WHERE i.id = st.object_id AND i.event_type = st.event_type AND i.ts = st.ts)
    RETURNING e.id)
  SELECT i.id, i.device_id, i.vehicle_id, i.event_type, i.ts FROM implied i
  WHERE NOT EXISTS (SELECT 1 FROM stored st WHERE st.object_id = i.id AND st.event_type = i.event_type AND st.ts = i.ts)
  ORDER BY i.ts, CASE i.event_type WHEN 'trip-started' THEN 0 WHEN 'trip-stopped' THEN 1 ELSE 2 END`;
