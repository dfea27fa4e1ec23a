import type { Knex } from 'knex';
import { streamPage, type StreamWindow } from '../paging.js';
import { prepared } from '../prepared.js';
import { columnsReader, LEASED_PREFIX, type EventRow } from './notification-fanout.js';
import type { HandedOver } from '../../lib/bus.js';
import { readableDeviceIds, type Principal } from './scope.js';
import { EVENT_COLUMNS, toEvent, type EventRecord } from './events.repository.js';
import {
  PAUSED_SUBSCRIPTION, SUBSCRIPTION_COLUMNS, SUBSCRIPTION_NAMES, toSubscription, type Subscription, type SubscriptionRow,
} from './subscriptions.repository.js';
import { storableText } from '../../lib/storable-text.js';

/** Characters of a receiver's answer (or of why a call failed) stored with an attempt, at most. */
export const STORED_RESPONSE_CHARS = 64 * 1024;

export type NotificationState = 'created' | 'queued' | 'complete' | 'error';

export interface NotificationRecord {
  id: string;
  eventId: string;
  eventType: string;
  eventTimestamp: Date;
  subscriptionId: string;
  deviceId: string;
  url: string;
  /** Null until its first delivery attempt is recorded; then the body of that attempt, which every retry posts again. */
  payload: string | null;
  state: NotificationState;
  attempts: number;
  responseCode: number | null;
  response: string | null;
  notifiedAt: Date | null;
  respondedAt: Date | null;
  nextAttemptAt: Date | null;
  createdAt: Date;
}

const COLUMNS = ['n.id', 'n.event_id', 'e.event_type', 'e.ts', 'n.subscription_id', 'n.device_id', 'n.url', 'n.payload',
  'n.state', 'n.attempts', 'n.response_code', 'n.response', 'n.notified_at', 'n.responded_at', 'n.next_attempt_at',
  'n.created_at'];

interface NotificationRow {
  id: string; event_id: string; event_type: string; ts: Date; subscription_id: string; device_id: string; url: string;
  payload: string | null; state: NotificationState; attempts: number; response_code: number | null; response: string | null;
  notified_at: Date | null; responded_at: Date | null; next_attempt_at: Date | null; created_at: Date;
}

const toNotification = (r: NotificationRow): NotificationRecord => ({
  id: r.id, eventId: r.event_id, eventType: r.event_type, eventTimestamp: r.ts, subscriptionId: r.subscription_id,
  deviceId: r.device_id, url: r.url, payload: r.payload, state: r.state, attempts: r.attempts,
  responseCode: r.response_code, response: r.response, notifiedAt: r.notified_at, respondedAt: r.responded_at,
  nextAttemptAt: r.next_attempt_at, createdAt: r.created_at,
});

/** What a worker needs to deliver a claimed notification. */
export interface ClaimedNotification {
  id: string; eventId: string; subscriptionId: string; applicationId: string; url: string; payload: string | null; attempts: number;
  webhookSecret: string;
  /** The receiver's origin (subscriptions.repository.ts endpointOf), as stored with the notification. */
  endpoint: string;
  /** Without a stored payload: the event and subscription to build it from (null: one of them was deleted). */
  sources: { event: EventRecord; subscription: Subscription } | null;
}

/** The notification's columns of a claimed row (claimReader reads them under a prefix); `sub_id` null: no subscription read. */
type ClaimColumns = {
  id: string; event_id: string; subscription_id: string; application_id: string; url: string; payload: string | null;
  attempts: number; webhook_secret: string; sub_id: string | null; endpoint: string;
};
const CLAIM_NAMES = ['id', 'event_id', 'subscription_id', 'application_id', 'url', 'payload', 'attempts', 'webhook_secret', 'sub_id', 'endpoint'];

/**
 * A claimed notification from a row holding CLAIM's columns but its event's, each prefixed `prefix`, and its event's row
 * (EVENT_COLUMNS; null or without id: the payload is stored, or the event was deleted).
 */
function claimReader(prefix: string): (r: Record<string, unknown>, event: EventRow | null) => ClaimedNotification {
  const columns = columnsReader<ClaimColumns>(prefix, CLAIM_NAMES);
  const subscription = columnsReader<SubscriptionRow>(`${prefix}sub_`, SUBSCRIPTION_NAMES);
  return (row, event) => {
    const r = columns(row);
    return {
      id: r.id, eventId: r.event_id, subscriptionId: r.subscription_id, applicationId: r.application_id, url: r.url,
      payload: r.payload, attempts: r.attempts, webhookSecret: r.webhook_secret, endpoint: r.endpoint,
    // what the payload is built from, read with the notification (only while no payload is stored)
      sources: r.payload === null && event?.id && r.sub_id ? { event: toEvent(event), subscription: toSubscription(subscription(row)) } : null,
    };
  };
}

const claimRow = claimReader('');
const claimEvent = columnsReader<EventRow>('ev_', EVENT_COLUMNS);
/** A claimed notification from a row of CLAIM: its columns, the event's prefixed `ev_` and the subscription's `sub_`. */
export const toClaimed = (r: Record<string, unknown>): ClaimedNotification => claimRow(r, r.ev_id ? claimEvent(r) : null);

const handedOverRow = claimReader(LEASED_PREFIX);
/** A notification handed over with its event (lib/bus.ts StoredEvent.leased), as a claim gives it. */
export const toHandedOver = (h: HandedOver): ClaimedNotification => handedOverRow(h.row, h.event as EventRow);

/**
 * Endpoints of one application a claim visits at most, in (endpoint) order: with thousands of distinct origins pending
 * (one tenant's wildcard DNS names or ports), a claim still reads a bounded number of them per application, and every
 * application has its turn in every claim. Those past the first ones are visited once these have no pending rows left:
 * rows not due yet (a retry's backoff) keep their place for as long as they wait.
 */
export const CLAIM_ENDPOINTS_PER_APPLICATION = 64;

/**
 * Leases up to `lim` due notifications for `leaseMs` ms, earliest due first, at most `per_endpoint` less its calls in
 * flight (`calls`, a JSON object: endpoint → calls of the claiming worker) of each endpoint and at most `per_app` less
 * its calls (`app_calls`: application id → calls) of each application, and, for those without a stored payload, reads
 * the event and subscription to build it from: one statement per claim. Parameters: per_endpoint, calls, per_app,
 * app_calls, lim, leaseMs.
 * Set-based: the (application, endpoint) pairs with pending notifications are read by a skip scan of
 * notifications_application_endpoint_due (one index descent per pair, `walk`): at most CLAIM_ENDPOINTS_PER_APPLICATION
 * of each application, and none past the first of an application without room. Then each pair's earliest due rows up
 * to its room (`candidates`: an endpoint or application at its limit reads none, however long its backlog), twice as
 * many as it may take: those locked by another worker's claim (SKIP LOCKED: several workers share the queue) leave
 * the others to take, so two workers claiming together both take what is due. The rows of a paused subscription are
 * never leased, whatever left them due (a pause racing a fan-out or a lease, a crash): they are held here (`hold`).
 * The rows locked are cut to the rooms and the limit (`chosen`) and leased. A notification leased by another worker is
 * skipped; its calls count against that worker's limits, not this one's (migration 031: counting every worker's
 * leases would need `locked_until` in an index, and a lease would no longer be a HOT update): with P workers an
 * endpoint has at most P × per_endpoint calls, an application P × per_app.
 * Every row returned holds `wanted`: how many of the due rows seen fitted the rooms and the limit (or were held). A
 * claim that leased fewer (another worker took or locked some) can claim again at once; it returns one row of nulls
 * but `wanted` when it leased none.
 */
export const CLAIM = `
  WITH RECURSIVE l AS (SELECT ?::int AS per_endpoint, ?::jsonb AS calls, ?::int AS per_app, ?::jsonb AS app_calls, ?::int AS lim),
  walk AS (
    (SELECT application_id AS app, endpoint, 1 AS k FROM notifications WHERE next_attempt_at IS NOT NULL
      ORDER BY application_id, endpoint LIMIT 1)
    UNION ALL
    SELECT x.app, x.endpoint, CASE WHEN x.app = w.app THEN w.k + 1 ELSE 1 END
    FROM walk w CROSS JOIN l CROSS JOIN LATERAL (
      (SELECT n.application_id AS app, n.endpoint FROM notifications n
        WHERE w.k < ${CLAIM_ENDPOINTS_PER_APPLICATION} AND l.per_app > coalesce((l.app_calls ->> w.app::text)::int, 0)
          AND n.next_attempt_at IS NOT NULL AND (n.application_id, n.endpoint) > (w.app, w.endpoint)
        ORDER BY n.application_id, n.endpoint LIMIT 1)
      UNION ALL
      (SELECT n.application_id, n.endpoint FROM notifications n
        WHERE n.next_attempt_at IS NOT NULL AND n.application_id > w.app
        ORDER BY n.application_id, n.endpoint LIMIT 1)
      LIMIT 1) x
  ), room AS (
    SELECT w.app, w.endpoint, greatest(0, l.per_endpoint - coalesce((l.calls ->> w.endpoint)::int, 0)) AS endpoint_free,
      greatest(0, l.per_app - coalesce((l.app_calls ->> w.app::text)::int, 0)) AS app_free
    FROM walk w, l
  ), candidates AS (
    SELECT d.id, d.next_attempt_at, d.held, r.app, r.endpoint, r.endpoint_free, r.app_free FROM room r, l CROSS JOIN LATERAL (
      SELECT n.id, n.next_attempt_at, ${PAUSED_SUBSCRIPTION('n.subscription_id')} AS held FROM notifications n
      WHERE n.application_id = r.app AND n.endpoint = r.endpoint AND n.next_attempt_at IS NOT NULL AND n.next_attempt_at <= now()
        AND n.state IN ('queued', 'error') AND (n.locked_until IS NULL OR n.locked_until < now())
      ORDER BY n.next_attempt_at, n.id LIMIT 2 * least(l.lim, r.endpoint_free, r.app_free)
    ) d
  ), ranked AS (
    SELECT c.*, row_number() OVER (PARTITION BY c.endpoint ORDER BY c.next_attempt_at, c.id) AS in_endpoint,
      row_number() OVER (PARTITION BY c.app ORDER BY c.next_attempt_at, c.id) AS in_app
    FROM candidates c WHERE NOT c.held
  ), picked AS (
    SELECT r.id, r.in_endpoint <= r.endpoint_free AND r.in_app <= r.app_free AS fits FROM ranked r, l
    WHERE r.in_endpoint <= 2 * r.endpoint_free AND r.in_app <= 2 * r.app_free
    ORDER BY r.next_attempt_at, r.id LIMIT 2 * (SELECT lim FROM l)
  ), hold AS (
    UPDATE notifications n SET paused = true, next_attempt_at = NULL
    WHERE n.id IN (SELECT h.id FROM notifications h
      WHERE h.id = ANY (ARRAY(SELECT id FROM candidates WHERE held)) AND h.next_attempt_at IS NOT NULL
        AND (h.locked_until IS NULL OR h.locked_until < now()) AND ${PAUSED_SUBSCRIPTION('h.subscription_id')}
      FOR UPDATE SKIP LOCKED)
    RETURNING n.id
  ), due AS (
    SELECT n.id, n.next_attempt_at, n.application_id, n.endpoint FROM notifications n
    WHERE n.id = ANY (ARRAY(SELECT id FROM picked)) AND n.next_attempt_at <= now() AND n.state IN ('queued', 'error')
      AND (n.locked_until IS NULL OR n.locked_until < now()) AND NOT ${PAUSED_SUBSCRIPTION('n.subscription_id')}
    FOR UPDATE SKIP LOCKED
  ), chosen AS (
    SELECT d.id FROM (
      SELECT d.*, row_number() OVER (PARTITION BY d.endpoint ORDER BY d.next_attempt_at, d.id) AS in_endpoint,
        row_number() OVER (PARTITION BY d.application_id ORDER BY d.next_attempt_at, d.id) AS in_app
      FROM due d) d, l
    WHERE d.in_endpoint <= l.per_endpoint - coalesce((l.calls ->> d.endpoint)::int, 0)
      AND d.in_app <= l.per_app - coalesce((l.app_calls ->> d.application_id::text)::int, 0)
    ORDER BY d.next_attempt_at, d.id LIMIT (SELECT lim FROM l)
  ), claimed AS (
    UPDATE notifications n SET locked_until = now() + ? * interval '1 millisecond' FROM chosen WHERE n.id = chosen.id
    RETURNING n.id, n.event_id, n.subscription_id, n.application_id, n.url, n.endpoint, n.payload, n.attempts, n.next_attempt_at
  ), wanted AS (
    SELECT least((SELECT lim FROM l), (SELECT count(*) FROM picked WHERE fits)) + (SELECT count(*) FROM candidates WHERE held) AS wanted
  )
  SELECT c.*, ap.webhook_secret,
    ${EVENT_COLUMNS.map((col) => `e.${col} AS ev_${col}`).join(', ')},
    ${SUBSCRIPTION_COLUMNS.map((col, i) => `${col} AS sub_${SUBSCRIPTION_NAMES[i]}`).join(', ')},
    k.wanted
  FROM wanted k LEFT JOIN (claimed c JOIN applications ap ON ap.id = c.application_id
    LEFT JOIN events e ON c.payload IS NULL AND e.id = c.event_id
    LEFT JOIN subscriptions s ON c.payload IS NULL AND s.id = c.subscription_id) ON true
  ORDER BY c.next_attempt_at, c.id`;

export interface AttemptOutcome {
  state: 'complete' | 'error';
  responseCode: number | null;
  response: string;
  notifiedAt: Date;
  respondedAt: Date | null;
  /** Delay before the next attempt; null when this was the last one. */
  retryInMs: number | null;
}

/** When recorded failures pause a subscription: after `failures` in a row (0: never) over at least `afterMs`. */
export interface PausePolicy { failures: number; afterMs: number }
const NEVER_PAUSE: PausePolicy = { failures: 0, afterMs: 0 };

/**
 * An attempt to record: the notification, its attempts count when it was claimed, the body posted (its UTF-8 bytes) when
 * it was the first one (stored as the notification's payload; null: the stored payload was posted), the outcome.
 */
export interface AttemptRecord { id: string; previousAttempts: number; body: Buffer | null; outcome: AttemptOutcome }

/**
 * Records a burst of attempts (recordAttempts), and what they say of their subscriptions: a success resets its
 * failures; failures add up, and past the pause policy (parameters failures, after_ms) pause it. Returns the attempts
 * recorded (`id`) and the subscriptions this statement paused (`paused`): their pending notifications are held after it,
 * in the same transaction (HOLD_PAUSED), and a notification recorded for a retry while its subscription is paused is
 * held here. The `= ANY (ARRAY(…))` puts the recorded ids in the notifications scan's
 * own condition, so a generic plan reads them through the primary key: joined to the recordset alone (estimated at
 * 100 rows, whatever it holds) the plan was a hash join over a sequential scan of the whole table once the queue
 * held a few thousand rows. The first attempts' bodies come
 * as one bytea parameter, each row giving where its body lies in it (UTF-8 bytes): sent as they were posted, they are
 * neither escaped into the JSON text nor unescaped from it (the bodies are most of the record's parameter, and
 * escaping them was a noticeable share of the notification worker's thread).
 */
export const RECORD_ATTEMPTS = `
  WITH v AS MATERIALIZED (
    SELECT * FROM json_to_recordset(?::json) AS v(id uuid, prev int, state text, response_code int,
      response text, notified_at timestamptz, responded_at timestamptz, retry_ms bigint, payload_at int, payload_bytes int)),
  n AS (
    UPDATE notifications n SET state = CASE WHEN v.state = 'error' AND v.retry_ms IS NOT NULL THEN 'queued' ELSE v.state END, attempts = v.prev + 1, response_code = v.response_code, response = v.response,
      payload = coalesce(n.payload, convert_from(substring(?::bytea FROM v.payload_at + 1 FOR v.payload_bytes), 'UTF8')),
      notified_at = v.notified_at, responded_at = CASE WHEN v.state = 'complete' THEN v.responded_at END, locked_until = NULL,
      next_attempt_at = CASE WHEN v.retry_ms IS NULL THEN NULL
        WHEN ${PAUSED_SUBSCRIPTION('n.subscription_id')} THEN NULL
        ELSE now() + v.retry_ms * interval '1 millisecond' END,
      paused = CASE WHEN v.retry_ms IS NULL THEN false
        ELSE ${PAUSED_SUBSCRIPTION('n.subscription_id')} END
    FROM v WHERE n.id = ANY (ARRAY(SELECT id FROM v)) AND n.id = v.id AND n.attempts = v.prev
    RETURNING n.id, n.subscription_id, v.state, v.notified_at),
  f AS (
    SELECT subscription_id AS id, bool_or(state = 'complete') AS ok, count(*) FILTER (WHERE state = 'error') AS failed,
      min(notified_at) AS since
    FROM n GROUP BY subscription_id),
  s AS (
    UPDATE subscriptions s SET
      consecutive_failures = CASE WHEN f.ok THEN 0 ELSE s.consecutive_failures + f.failed END,
      failing_since = CASE WHEN f.ok THEN NULL ELSE coalesce(s.failing_since, f.since) END,
      paused_at = CASE WHEN s.paused_at IS NULL AND NOT f.ok AND p.failures > 0 AND s.consecutive_failures + f.failed >= p.failures
          AND coalesce(s.failing_since, f.since) <= now() - p.after_ms * interval '1 millisecond' THEN now()
        ELSE s.paused_at END
    FROM f, (SELECT ?::int AS failures, ?::bigint AS after_ms) p
    WHERE s.id = f.id AND (NOT f.ok OR s.consecutive_failures > 0)
    RETURNING s.id, s.paused_at = now() AS paused),
  a AS (
    INSERT INTO notification_attempts (notification_id, attempt, outcome, response_code, response, notified_at, responded_at)
    SELECT v.id, v.prev + 1, v.state, v.response_code, v.response, v.notified_at, v.responded_at
    FROM v JOIN n ON n.id = v.id
    RETURNING notification_id)
  SELECT notification_id AS id, NULL::uuid AS paused FROM a
  UNION ALL
  SELECT NULL, id FROM s WHERE paused`;

/**
 * Holds the pending notifications of subscriptions just paused (parameter: their ids), in the transaction that paused
 * them (recordAttempts). Those another statement has locked are skipped, not waited for: a pause through the API locks
 * its notifications before its subscription, this transaction the subscription first (RECORD_ATTEMPTS), and waiting
 * could deadlock; that statement holds them, or the claim that finds them due does (CLAIM).
 */
const HOLD_PAUSED = `
  UPDATE notifications SET paused = true, next_attempt_at = NULL
  WHERE id IN (SELECT id FROM notifications WHERE subscription_id = ANY (?::uuid[]) AND next_attempt_at IS NOT NULL
    AND (locked_until IS NULL OR locked_until < now()) FOR UPDATE SKIP LOCKED)`;

interface AttemptRow {
  attempt: number; outcome: 'complete' | 'error'; response_code: number | null; response: string | null;
  notified_at: Date; responded_at: Date | null;
}

export function notificationsRepository(knex: Knex) {
  const own = (app: Principal, trx: Knex) => trx('notifications as n').join('events as e', 'e.id', 'n.event_id')
    .select(COLUMNS).where('n.application_id', app.id).whereIn('n.device_id', readableDeviceIds(trx, app));
  const page = async (base: () => Knex.QueryBuilder, w: StreamWindow) => {
    const p = await streamPage<NotificationRow>(base, 'n.created_at', w, 'n.id');
    return { remaining: p.remaining, prior: p.prior, newest: p.newest, notifications: p.rows.map(toNotification) };
  };

  return {
    async get(app: Principal, id: string, trx: Knex = knex): Promise<NotificationRecord | undefined> {
      const row = await own(app, trx).where('n.id', id).first();
      return row && toNotification(row);
    },

    /** Newest first, stream pagination on createdAt (docs/reference/rest-api.md#pagination). */
    listForSubscription(app: Principal, subscriptionId: string, w: StreamWindow, trx: Knex = knex) {
      return page(() => own(app, trx).where('n.subscription_id', subscriptionId), w);
    },

    listForEvent(app: Principal, eventId: string, w: StreamWindow, trx: Knex = knex) {
      return page(() => own(app, trx).where('n.event_id', eventId), w);
    },

    /** An event the application may see: of a device it can read, and not another application's rule event. */
    async eventVisible(app: Principal, eventId: string, trx: Knex = knex): Promise<boolean> {
      const row = await trx('events').select('id').where('id', eventId)
        .whereIn('device_id', readableDeviceIds(trx, app))
        .where((q) => q.whereNull('application_id').orWhere('application_id', app.id)).first();
      return Boolean(row);
    },

    ...queueOperations(knex),
  };
}
export type NotificationsRepository = ReturnType<typeof notificationsRepository>;

/**
 * A claim's rooms: at most `perEndpoint` calls per endpoint and `perApplication` per application (default: the claim's
 * limit), less the claiming worker's calls in flight (`calls`: endpoint → calls; `applicationCalls`: application id → calls).
 */
export interface ClaimRooms { perEndpoint?: number; calls?: Record<string, number>; perApplication?: number; applicationCalls?: Record<string, number> }

/** The notifications table as a queue (several workers share it through row locks). */
function queueOperations(knex: Knex) {
  return {
    /**
     * Leases up to `limit` due notifications for `leaseMs`: queued or awaiting a retry, due, and not
     * leased by a live worker. A crashed worker's lease expires and its rows become due again.
     */
    async claim(limit: number, leaseMs: number, rooms: ClaimRooms = {}, trx: Knex = knex): Promise<ClaimedNotification[]> {
      return (await this.claimRound(limit, leaseMs, rooms, trx)).claimed;
    },

    /** claim, and how many of the due rows it saw it would have taken (CLAIM `wanted`): more than it took, claim again. */
    async claimRound(limit: number, leaseMs: number, rooms: ClaimRooms = {}, trx: Knex = knex) {
      const { rows } = await prepared(trx, CLAIM, [rooms.perEndpoint ?? limit, JSON.stringify(rooms.calls ?? {}),
        rooms.perApplication ?? limit, JSON.stringify(rooms.applicationCalls ?? {}), limit, leaseMs]);
      const all = rows as Record<string, unknown>[];
      return { claimed: all.filter((r) => r.id !== null).map(toClaimed), wanted: Number(all[0]?.wanted ?? 0) };
    },

    /**
     * Records attempts and their notifications' new states, any number in one statement, each only if no
     * other worker recorded that attempt first (its lease had expired); returns the ids recorded. Whatever a receiver
     * answered is stored: its text bounded and made storable (lib/storable-text.ts), so no answer can fail the
     * statement, nor the other attempts recorded with it. Failures past `pause` pause their subscription.
     */
    async recordAttempts(items: AttemptRecord[], pause: PausePolicy = NEVER_PAUSE, trx: Knex = knex): Promise<Set<string>> {
      if (!items.length) return new Set();
      const bodies: Buffer[] = [];
      let at = 0;
      const rows = items.map(({ id, previousAttempts: prev, body, outcome: o }) => {
        if (body) bodies.push(body);
        const row = {
          id, prev, state: o.state, response_code: o.responseCode, response: storableText(o.response, STORED_RESPONSE_CHARS),
          notified_at: o.notifiedAt,
          responded_at: o.respondedAt, retry_ms: o.retryInMs, payload_at: body && at, payload_bytes: body && body.length,
        };
        at += body?.length ?? 0;
        return row;
      });
      const params = [JSON.stringify(rows), Buffer.concat(bodies), pause.failures, pause.afterMs];
      // one transaction: no claim sees a subscription paused with its notifications still due, nor does a crash leave it so
      const out = await trx.transaction(async (tx) => {
        const { rows: recorded } = await prepared(tx, RECORD_ATTEMPTS, params);
        const paused = (recorded as { paused: string | null }[]).flatMap((r) => (r.paused ? [r.paused] : []));
        if (paused.length) await tx.raw(HOLD_PAUSED, [paused]);
        return recorded as { id: string | null }[];
      });
      return new Set(out.flatMap((r) => (r.id ? [r.id] : [])));
    },

    /**
     * Gives leased notifications back without an attempt (a worker stopping mid-call, or not delivering them). Those of
     * a subscription paused while they were leased are kept as its other notifications are (holdNotifications).
     */
    async release(ids: string[], trx: Knex = knex): Promise<void> {
      if (!ids.length) return;
      const paused = PAUSED_SUBSCRIPTION('notifications.subscription_id');
      await trx('notifications').update({
        locked_until: null, paused: trx.raw(`paused OR ${paused}`),
        next_attempt_at: trx.raw(`CASE WHEN ${paused} THEN NULL ELSE next_attempt_at END`),
      }).whereIn('id', ids);
    },

    async attempts(notificationId: string, trx: Knex = knex) {
      const rows = await trx('notification_attempts').select('attempt', 'outcome', 'response_code', 'response',
        'notified_at', 'responded_at').where('notification_id', notificationId).orderBy('attempt');
      return rows.map((r: AttemptRow) => ({
        attempt: r.attempt, outcome: r.outcome, responseCode: r.response_code,
        response: r.response, notifiedAt: r.notified_at, respondedAt: r.responded_at,
      }));
    },
  };
}
