import type { Knex } from 'knex';
import { prepared } from '../prepared.js';

/**
 * The notifications of events (spec 3.1), as SQL over a set `e` of event rows: a notification per matching
 * subscription, queued (due now). An event matches a subscription of its device whose application can still
 * read the device, when the type is equal (or the subscription is `rule-*` and the event a rule event), the
 * subscription's object (if any) is the event's, and a rule event belongs to the subscription's application.
 * `leaseMs`, an SQL expression (NULL: none): the notifications are stored leased for that long, to the worker the
 * statement's caller hands them to (lib/bus.ts handOffLeaseMs), so no claim has to find them.
 */
export const FAN_OUT = (events: string, leaseMs = 'NULL::bigint') => `
  INSERT INTO notifications (id, event_id, subscription_id, application_id, device_id, url, state, created_at, next_attempt_at,
    locked_until)
  SELECT gen_random_uuid(), e.id, s.id, s.application_id, s.device_id, s.url, 'queued', e.stored, e.stored,
    statement_timestamp() + ${leaseMs} * interval '1 millisecond'
  FROM ${events} e
  JOIN subscriptions s ON s.device_id = e.device_id
    AND (s.event_type = e.event_type OR (s.event_type = 'rule-*' AND e.event_type IN ('rule-enter', 'rule-leave')))
    AND (s.object_id IS NULL OR (s.object_type = e.object_type AND s.object_id = e.object_id))
    AND (e.application_id IS NULL OR e.application_id = s.application_id)
  JOIN applications ap ON ap.id = s.application_id
  JOIN authorizations au ON au.device_id = s.device_id AND au.application_id = s.application_id
  WHERE ap.kind = 'consumer' OR EXISTS (
    SELECT 1 FROM registrations r WHERE r.device_id = s.device_id AND r.application_id = s.application_id)`;

/** An event row to store, in the events table's columns. */
export interface EventRow {
  id: string; device_id: string; vehicle_id: string | null; application_id: string | null; ts: Date; stored: Date;
  event_type: string; object_type: string; object_id: string | null; meta: Record<string, unknown> | null;
}

/**
 * Stores events and their notifications in one statement (a constant text, prepared on PostgreSQL): the rows go
 * as one JSON parameter, whatever their number.
 */
const INSERT_EVENTS = `
  WITH ev AS (
    INSERT INTO events (id, device_id, vehicle_id, application_id, ts, stored, event_type, object_type, object_id, meta)
    SELECT r.id, r.device_id, r.vehicle_id, r.application_id, r.ts, r.stored, r.event_type, r.object_type, r.object_id, r.meta
    FROM json_to_recordset(?::json) AS r(id uuid, device_id uuid, vehicle_id uuid, application_id uuid, ts timestamptz,
      stored timestamptz, event_type text, object_type text, object_id uuid, meta jsonb)
    RETURNING id, device_id, application_id, stored, event_type, object_type, object_id),
  notified AS (${FAN_OUT('ev')} RETURNING 1)
  SELECT count(*)::int AS notifications FROM notified`;

/** Inserts the events with their notifications (same transaction); returns the number of notifications. */
export async function insertEventsNotifying(trx: Knex, rows: EventRow[]): Promise<number> {
  if (!rows.length) return 0;
  const { rows: out } = await prepared(trx, INSERT_EVENTS, [JSON.stringify(rows)]);
  return Number(out[0]?.notifications ?? 0);
}
