import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { offsetPage, type OffsetWindow } from '../paging.js';
import { readableDeviceIds, type Principal } from './scope.js';

export interface EventObject { type: string; id: string }

export interface Subscription {
  id: string;
  applicationId: string;
  deviceId: string;
  eventType: string;
  url: string;
  object: EventObject | null;
  appData: string | null;
  createdAt: Date;
  updatedAt: Date;
  delivery: DeliveryState;
}

/**
 * How its receiver has been answering: failed attempts in a row (a success resets them), since when, and when the
 * subscription was paused (null: active). Paused, its notifications are kept and none is delivered until it is resumed.
 */
export interface DeliveryState { consecutiveFailures: number; failingSince: Date | null; pausedAt: Date | null }

export type NewSubscription = Pick<Subscription, 'deviceId' | 'eventType' | 'url' | 'object' | 'appData'>;
export interface SubscriptionFilter { objectType?: string; objectId?: string }

export const SUBSCRIPTION_COLUMNS = ['s.id', 's.application_id', 's.device_id', 's.event_type', 's.url', 's.object_type', 's.object_id',
  's.app_data', 's.created_at', 's.updated_at', 's.consecutive_failures', 's.failing_since', 's.paused_at'];
/** SUBSCRIPTION_COLUMNS without their `s.`: the names toSubscription reads (aliased with a prefix beside other rows). */
export const SUBSCRIPTION_NAMES = SUBSCRIPTION_COLUMNS.map((col) => col.slice(2));

/**
 * A subscriptions row (SUBSCRIPTION_NAMES): its object's type and id are written together. The delivery columns may be
 * absent where a statement leaves them out.
 */
export type SubscriptionRow = {
  id: string; application_id: string; device_id: string; event_type: string; url: string; app_data: string | null;
  created_at: Date; updated_at: Date; consecutive_failures?: number | null; failing_since?: Date | null; paused_at?: Date | null;
} & ({ object_type: string; object_id: string } | { object_type: null; object_id: null });

export const toSubscription = (r: SubscriptionRow): Subscription => ({
  id: r.id, applicationId: r.application_id, deviceId: r.device_id, eventType: r.event_type, url: r.url,
  object: r.object_id ? { type: r.object_type, id: r.object_id } : null, appData: r.app_data,
  createdAt: r.created_at, updatedAt: r.updated_at,
  delivery: { consecutiveFailures: r.consecutive_failures ?? 0, failingSince: r.failing_since ?? null, pausedAt: r.paused_at ?? null },
});

/**
 * The endpoint a callback URL posts to: its origin (scheme, host, port; no credentials, no path). The worker's
 * per-endpoint limit counts calls by it (workers/notifications/index.ts).
 */
export const endpointOf = (url: string): string => new URL(url).origin;

/** The application has as many subscriptions as it may have (config maxSubscriptionsPerApplication). */
export class SubscriptionCapReached extends Error {
  constructor(readonly count: number) { super(`the application has ${count} subscriptions`); }
}

/**
 * SQL: the subscription `id` (a column or expression) is paused. Its notifications are not claimed, and those pending
 * are kept (held: `paused`, no next attempt) by whatever statement finds them due or gives them back.
 */
export const PAUSED_SUBSCRIPTION = (id: string) => `EXISTS (SELECT 1 FROM subscriptions ps WHERE ps.id = ${id} AND ps.paused_at IS NOT NULL)`;

/**
 * Keeps the pending notifications of paused subscriptions (`ids`): out of the queue (no next attempt), marked `paused`.
 * A notification leased by a call in flight is left to its record, which keeps it the same way, or to the claim that
 * finds it due once its lease expired (CLAIM).
 */
export function holdNotifications(trx: Knex, ids: string[]): Promise<number> {
  return trx('notifications').update({ paused: true, next_attempt_at: null }).whereIn('subscription_id', ids)
    .whereNotNull('next_attempt_at').where((q) => q.whereNull('locked_until').orWhere('locked_until', '<', trx.fn.now()));
}

/** The kept notifications of a resumed subscription are due now, oldest first as ever. */
function resumeNotifications(trx: Knex, id: string): Promise<number> {
  return trx('notifications').update({ paused: false, next_attempt_at: trx.fn.now() }).where({ subscription_id: id, paused: true });
}

/**
 * Subscriptions belong to the application that made them and are visible to it only while it can
 * read the device; anything else reads as absent.
 */
export function subscriptionsRepository(knex: Knex) {
  const own = (app: Principal, trx: Knex) => trx('subscriptions as s').select(SUBSCRIPTION_COLUMNS)
    .where('s.application_id', app.id).whereIn('s.device_id', readableDeviceIds(trx, app));
  const get = async (app: Principal, id: string, trx: Knex = knex): Promise<Subscription | undefined> => {
    const row = await own(app, trx).where('s.id', id).first();
    return row && toSubscription(row);
  };

  return {
    /**
     * With `cap`, refuses (SubscriptionCapReached) when the application has that many already: counted and inserted
     * under a lock of the application's row, so concurrent creates cannot pass the cap together.
     */
    async create(app: Principal, input: NewSubscription, trx: Knex = knex, cap: number | null = null): Promise<Subscription> {
      const now = new Date();
      const row = {
        id: randomUUID(), application_id: app.id, device_id: input.deviceId, event_type: input.eventType, url: input.url,
        endpoint: endpointOf(input.url),
        ...(input.object ? { object_type: input.object.type, object_id: input.object.id } : { object_type: null, object_id: null }),
        app_data: input.appData, created_at: now, updated_at: now,
      };
      if (cap === null) {
        await trx('subscriptions').insert(row);
      } else {
        await trx.transaction(async (tx) => {
          await tx.raw('SELECT 1 FROM applications WHERE id = ? FOR NO KEY UPDATE', [app.id]);
          const [{ n }] = await tx('subscriptions').where('application_id', app.id).count({ n: '*' });
          if (Number(n) >= cap) throw new SubscriptionCapReached(Number(n));
          await tx('subscriptions').insert(row);
        });
      }
      return toSubscription(row);
    },

    get,

    /** A device's subscriptions of the application, newest first. */
    async listForDevice(app: Principal, deviceId: string, filter: SubscriptionFilter, w: OffsetWindow, trx: Knex = knex) {
      const base = () => {
        const q = own(app, trx).where('s.device_id', deviceId);
        if (filter.objectType) q.where('s.object_type', filter.objectType);
        if (filter.objectId) q.where('s.object_id', filter.objectId);
        return q;
      };
      const page = await offsetPage<SubscriptionRow>(base,
        [{ column: 's.created_at', order: 'desc' }, { column: 's.id', order: 'desc' }], w);
      return { total: page.total, subscriptions: page.rows.map(toSubscription) };
    },

    /**
     * Only url, appData and the delivery state can change; undefined leaves a field as it is.
     * `paused` true pauses the subscription (its pending notifications are kept, undelivered); false resumes it: its
     * failures are forgotten and its kept notifications are due at once.
     */
    async update(app: Principal, id: string, changes: { url?: string; appData?: string | null; paused?: boolean }, trx: Knex = knex) {
      const gone = new Error('the subscription is no longer readable');
      return trx.transaction(async (tx) => {
        const current = await get(app, id, tx);
        if (!current) return undefined;
        const set: Record<string, unknown> = { updated_at: new Date() };
        if (changes.url !== undefined) Object.assign(set, { url: changes.url, endpoint: endpointOf(changes.url) });
        if (changes.appData !== undefined) set.app_data = changes.appData;
        const pausing = changes.paused === true && !current.delivery.pausedAt;
        const resuming = changes.paused === false && Boolean(current.delivery.pausedAt);
        if (pausing) set.paused_at = tx.fn.now();
        if (resuming) Object.assign(set, { paused_at: null, consecutive_failures: 0, failing_since: null });
        // its notifications are locked before the subscription, as recording attempts does (no deadlock between them)
        if (pausing) await holdNotifications(tx, [id]);
        const updated = await tx('subscriptions').update(set)
          .where({ id, application_id: app.id }).whereIn('device_id', readableDeviceIds(tx, app));
        if (!updated) throw gone; // its device was deregistered meanwhile: nothing is changed, held notifications neither
        if (resuming) await resumeNotifications(tx, id);
        return get(app, id, tx);
      }).catch((err) => { if (err === gone) return undefined; throw err; });
    },

    async delete(app: Principal, id: string, trx: Knex = knex): Promise<boolean> {
      const removed = await trx('subscriptions').delete()
        .where({ id, application_id: app.id }).whereIn('device_id', readableDeviceIds(trx, app));
      return removed > 0;
    },

    /** A rule subscription must name a rule of that device owned by the application. */
    async ruleOfDevice(applicationId: string, deviceId: string, ruleId: string, trx: Knex = knex): Promise<boolean> {
      const row = await trx('rules').select('id').where({ id: ruleId, device_id: deviceId, application_id: applicationId }).first();
      return Boolean(row);
    },
  };
}
export type SubscriptionsRepository = ReturnType<typeof subscriptionsRepository>;

/** Deregistration: the application's subscriptions of the device go, with their notifications. */
export function removeDeviceSubscriptions(trx: Knex, applicationId: string, deviceId: string): Promise<number> {
  return trx('subscriptions').where({ application_id: applicationId, device_id: deviceId }).delete();
}
