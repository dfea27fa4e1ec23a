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
}

export type NewSubscription = Pick<Subscription, 'deviceId' | 'eventType' | 'url' | 'object' | 'appData'>;
export interface SubscriptionFilter { objectType?: string; objectId?: string }

export const SUBSCRIPTION_COLUMNS = ['s.id', 's.application_id', 's.device_id', 's.event_type', 's.url', 's.object_type', 's.object_id',
  's.app_data', 's.created_at', 's.updated_at'];
/** SUBSCRIPTION_COLUMNS without their `s.`: the names toSubscription reads (aliased with a prefix beside other rows). */
export const SUBSCRIPTION_NAMES = SUBSCRIPTION_COLUMNS.map((col) => col.slice(2));

export const toSubscription = (r: Record<string, any>): Subscription => ({
  id: r.id, applicationId: r.application_id, deviceId: r.device_id, eventType: r.event_type, url: r.url,
  object: r.object_id ? { type: r.object_type, id: r.object_id } : null, appData: r.app_data,
  createdAt: r.created_at, updatedAt: r.updated_at,
});

/**
 * Subscriptions belong to the application that made them and are visible to it only while it can
 * read the device (spec part 5); anything else reads as absent.
 */
export function subscriptionsRepository(knex: Knex) {
  const own = (app: Principal, trx: Knex) => trx('subscriptions as s').select(SUBSCRIPTION_COLUMNS)
    .where('s.application_id', app.id).whereIn('s.device_id', readableDeviceIds(trx, app));
  const get = async (app: Principal, id: string, trx: Knex = knex): Promise<Subscription | undefined> => {
    const row = await own(app, trx).where('s.id', id).first();
    return row && toSubscription(row);
  };

  return {
    async create(app: Principal, input: NewSubscription, trx: Knex = knex): Promise<Subscription> {
      const now = new Date();
      const row = {
        id: randomUUID(), application_id: app.id, device_id: input.deviceId, event_type: input.eventType, url: input.url,
        object_type: input.object?.type ?? null, object_id: input.object?.id ?? null, app_data: input.appData,
        created_at: now, updated_at: now,
      };
      await trx('subscriptions').insert(row);
      return toSubscription(row);
    },

    get,

    /** A device's subscriptions of the application, newest first (reference-notes §3.2). */
    async listForDevice(app: Principal, deviceId: string, filter: SubscriptionFilter, w: OffsetWindow, trx: Knex = knex) {
      const base = () => {
        const q = own(app, trx).where('s.device_id', deviceId);
        if (filter.objectType) q.where('s.object_type', filter.objectType);
        if (filter.objectId) q.where('s.object_id', filter.objectId);
        return q;
      };
      const page = await offsetPage<Record<string, any>>(base,
        [{ column: 's.created_at', order: 'desc' }, { column: 's.id', order: 'desc' }], w);
      return { total: page.total, subscriptions: page.rows.map(toSubscription) };
    },

    /** Only url and appData can change (reference-notes §1.3); undefined leaves a field as it is. */
    async update(app: Principal, id: string, changes: { url?: string; appData?: string | null }, trx: Knex = knex) {
      const set: Record<string, unknown> = { updated_at: new Date() };
      if (changes.url !== undefined) set.url = changes.url;
      if (changes.appData !== undefined) set.app_data = changes.appData;
      const updated = await trx('subscriptions').update(set)
        .where({ id, application_id: app.id }).whereIn('device_id', readableDeviceIds(trx, app));
      return updated ? get(app, id, trx) : undefined;
    },

    async delete(app: Principal, id: string, trx: Knex = knex): Promise<boolean> {
      const removed = await trx('subscriptions').delete()
        .where({ id, application_id: app.id }).whereIn('device_id', readableDeviceIds(trx, app));
      return removed > 0;
    },

    /** A rule subscription must name a rule of that device owned by the application (reference-notes §1.3). */
    async ruleOfDevice(applicationId: string, deviceId: string, ruleId: string, trx: Knex = knex): Promise<boolean> {
      const row = await trx('rules').select('id').where({ id: ruleId, device_id: deviceId, application_id: applicationId }).first();
      return Boolean(row);
    },
  };
}
export type SubscriptionsRepository = ReturnType<typeof subscriptionsRepository>;

/** Deregistration (spec 4.1): the application's subscriptions of the device go, with their notifications. */
export function removeDeviceSubscriptions(trx: Knex, applicationId: string, deviceId: string): Promise<number> {
  return trx('subscriptions').where({ application_id: applicationId, device_id: deviceId }).delete();
}
