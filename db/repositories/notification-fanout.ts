import type { Knex } from 'knex';
import { prepared } from '../prepared.js';
import type { HandedOver } from '../../lib/bus.js';
import { SUBSCRIPTION_COLUMNS, SUBSCRIPTION_NAMES } from './subscriptions.repository.js';

/**
 * The notifications of events (docs/concepts/rules-events-webhooks.md), as SQL over a set `e` of event rows: a
 * notification per matching subscription, queued (due now). An event matches a subscription of its device whose
 * application can still read the device, when the type is equal (or the subscription is `rule-*` and the event a rule
 * event), the subscription's object (if any) is the event's, and a rule event belongs to the subscription's
 * application. They are stored leased for the statement's `lease` CTE (`SELECT ?::bigint AS ms`; null: not leased), to
 * the worker the statement's caller hands them to (lib/bus.ts handOffLeaseMs), so no claim has to find them. A paused
 * subscription's are kept: `paused`, not leased, with no next attempt (out of the queue until it is resumed). Each
 * carries its subscription's endpoint, for the worker's per-endpoint limit. The subscriptions notified are key-share
 * locked (migration 030: no per-row key): one deleted meanwhile waits for this transaction to commit and then takes its
 * notifications with it; one deleted since the statement's snapshot is not locked (READ COMMITTED: its newest version
 * is gone) and gets none.
 */
const FAN_OUT = (events: string) => `
  INSERT INTO notifications (id, event_id, subscription_id, application_id, device_id, url, endpoint, state, created_at,
    next_attempt_at, locked_until, paused)
  SELECT gen_random_uuid(), e.id, s.id, s.application_id, s.device_id, s.url, s.endpoint, 'queued', e.stored,
    CASE WHEN s.paused_at IS NULL THEN e.stored END,
    CASE WHEN s.paused_at IS NULL THEN statement_timestamp() + (SELECT ms FROM lease) * interval '1 millisecond' END,
    s.paused_at IS NOT NULL
  FROM ${events} e
  JOIN subscriptions s ON s.device_id = e.device_id
    AND (s.event_type = e.event_type OR (s.event_type = 'rule-*' AND e.event_type IN ('rule-enter', 'rule-leave')))
    AND (s.object_id IS NULL OR (s.object_type = e.object_type AND s.object_id = e.object_id))
    AND (e.application_id IS NULL OR e.application_id = s.application_id)
  JOIN applications ap ON ap.id = s.application_id
  JOIN authorizations au ON au.device_id = s.device_id AND au.application_id = s.application_id
  WHERE ap.kind = 'consumer' OR EXISTS (
    SELECT 1 FROM registrations r WHERE r.device_id = s.device_id AND r.application_id = s.application_id)
  FOR KEY SHARE OF s`;

/** The `notified` CTE of a statement storing events `events` (the CTE's name): FAN_OUT, returning what EVENTS_AND_LEASED reads. */
export const NOTIFIED = (events: string) => `notified AS (${FAN_OUT(events)}
  RETURNING id, event_id, subscription_id, url, endpoint, application_id, locked_until IS NOT NULL AS leased)`;

/** The events table's columns (events.repository.ts toEvent reads them). */
export const EVENT_COLUMNS = ['id', 'device_id', 'vehicle_id', 'application_id', 'ts', 'stored', 'event_type', 'object_type', 'object_id', 'meta'];

/**
 * A notification NOTIFIED stored leased (alias `n`, with its subscription `s` and application `ap`): the columns of a
 * claimed one (notifications.repository.ts CLAIM) but its event's, each prefixed `n_` (LEASED_PREFIX).
 */
export const LEASED_PREFIX = 'n_';
const LEASED_FIELDS: (readonly [expression: string, name: string])[] = [
  ['n.id', 'id'], ['n.event_id', 'event_id'], ['n.subscription_id', 'subscription_id'], ['n.application_id', 'application_id'], ['n.url', 'url'], ['n.endpoint', 'endpoint'],
  ['NULL::text', 'payload'],
  ['0', 'attempts'], ['ap.webhook_secret', 'webhook_secret'],
  ...SUBSCRIPTION_COLUMNS.map((col, i) => [col, `sub_${SUBSCRIPTION_NAMES[i]}`] as const),
];
const LEASED_ID = `${LEASED_PREFIX}id`;

/**
 * What a statement storing events (a CTE `ev` returning EVENT_COLUMNS) and their notifications (NOTIFIED) returns: a row
 * per event (EVENT_COLUMNS, `n_id` null; with `events: 'leasing'`, only when the statement leases), and a row per
 * notification stored leased (`id` its event's, then LEASED_FIELDS), events first in (ts, object_id, id) order. A union,
 * not a join of the two CTEs: their row estimates are tiny, so the join was a nested loop comparing every event with
 * every notification: quadratic in a batch's events.
 */
export const EVENTS_AND_LEASED = (events: 'all' | 'leasing') => `
  SELECT ${EVENT_COLUMNS.map((col) => `ev.${col}`).join(', ')}, ${LEASED_FIELDS.map(([, name]) => `NULL AS ${LEASED_PREFIX}${name}`).join(', ')}
  FROM ev${events === 'leasing' ? ' WHERE (SELECT ms FROM lease) IS NOT NULL' : ''}
  UNION ALL
  SELECT n.event_id, ${EVENT_COLUMNS.slice(1).map(() => 'NULL').join(', ')}, ${LEASED_FIELDS.map(([expr, name]) => `${expr} AS ${LEASED_PREFIX}${name}`).join(', ')}
  FROM notified n LEFT JOIN subscriptions s ON s.id = n.subscription_id LEFT JOIN applications ap ON ap.id = n.application_id
  WHERE n.leased
  ORDER BY ts, object_id, id, ${LEASED_ID}`;

/** The rows of EVENTS_AND_LEASED: each event's row by id, and the notifications handed over with it (lib/bus.ts). */
export function eventsAndLeased<E extends EventRow = EventRow>(rows: EventsAndLeasedRow[]): { events: Map<string, E>; leased: Map<string, HandedOver[]> } {
  const events = new Map<string, E>();
  const leased = new Map<string, HandedOver[]>();
  for (const r of rows) {
    if (r[LEASED_ID] === null) { events.set(r.id, r as E); continue; }
    const list = leased.get(r.id);
    const item = { row: r, event: events.get(r.id)! };
    if (list) list.push(item); else leased.set(r.id, [item]);
  }
  return { events, leased };
}

/**
 * A reader of the columns `prefix` + each of `names` of a row, as an object keyed by the names: the keys are made once,
 * and every object it builds has the same shape (stripping prefixes by scanning every column of every row would
 * be a noticeable share of the worker's thread).
 */
export function columnsReader<T extends Record<string, unknown>>(prefix: string, names: readonly string[]): (r: Record<string, unknown>) => T {
  const pairs = names.map((name) => [prefix + name, name] as const);
  return (r) => {
    const out: Record<string, unknown> = {};
    for (const [from, to] of pairs) out[to] = r[from];
    // `names` are T's columns, as the statement selected them
    return out as T;
  };
}

/** An event row to store, in the events table's columns. */
export type EventRow = {
  id: string; device_id: string; vehicle_id: string | null; application_id: string | null; ts: Date; stored: Date;
  event_type: string; object_type: string; object_id: string | null; meta: Record<string, unknown> | null;
};

/** A row of EVENTS_AND_LEASED: an event's (EVENT_COLUMNS, `n_id` null), or a notification's with its event's `id`. */
export type EventsAndLeasedRow = Record<string, unknown> & { id: string };

/**
 * Stores events and their notifications in one statement (a constant text, prepared on PostgreSQL): the rows go
 * as one JSON parameter, whatever their number. Returns EVENTS_AND_LEASED, the events' rows only when it leases (its
 * caller has them otherwise).
 */
const INSERT_EVENTS = `
  WITH lease AS (SELECT ?::bigint AS ms),
  ev AS (
    INSERT INTO events (id, device_id, vehicle_id, application_id, ts, stored, event_type, object_type, object_id, meta)
    SELECT r.id, r.device_id, r.vehicle_id, r.application_id, r.ts, r.stored, r.event_type, r.object_type, r.object_id, r.meta
    FROM json_to_recordset(?::json) AS r(id uuid, device_id uuid, vehicle_id uuid, application_id uuid, ts timestamptz,
      stored timestamptz, event_type text, object_type text, object_id uuid, meta jsonb)
    RETURNING ${EVENT_COLUMNS.join(', ')}),
  ${NOTIFIED('ev')}
  ${EVENTS_AND_LEASED('leasing')}`;

/**
 * Inserts the events with their notifications (same transaction). With `leaseMs` (lib/bus.ts handOffLeaseMs), the
 * notifications are stored leased for that long; returns them by event id, for this process's worker.
 */
export async function insertEventsNotifying(trx: Knex, rows: EventRow[], leaseMs: number | null = null): Promise<Map<string, HandedOver[]>> {
  if (!rows.length) return new Map();
  const { rows: out } = await prepared(trx, INSERT_EVENTS, [leaseMs, JSON.stringify(rows)]);
  return eventsAndLeased(out).leased;
}
