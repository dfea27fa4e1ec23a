import { expect } from 'vitest';
import { createBus } from '../../lib/bus.js';
import { silentLogger } from '../../lib/logger.js';
import type { Config } from '../../lib/config.js';
import type { NewEvent } from '../../db/repositories/events.repository.js';
import type { Part } from '../../bin/platform.js';
import { startNotificationWorker, type NotificationWorkerOptions } from '../../workers/notifications/index.js';
import type { TestApp } from '../helpers/app.js';

/** Workers, subscriptions and events for the delivery tests, over one test app. */
export function deliveryKit(t: () => TestApp) {
  const bus = createBus();
  const workers: Part[] = [];
  type App = Awaited<ReturnType<TestApp['make']['application']>>;

  return {
    bus,
    async worker(config: Partial<Config> = {}, opts: NotificationWorkerOptions = { pollMs: 50 }) {
      const { db, repos } = t();
      const part = await startNotificationWorker({ config: { ...t().config, ...config }, db, repos, log: silentLogger, bus }, opts);
      workers.push(part);
      return part;
    },
    /** The workers started and not closed yet, oldest first. */
    workers: () => [...workers],
    async closeWorkers() {
      for (const w of workers.splice(0)) await w.close();
    },
    /** An application, its device and a subscription to `eventType` at `url`. */
    async subscribed(url: string, extra: Record<string, unknown> = {}, eventType = 'startup') {
      const app = await t().make.application();
      const device = await t().make.device(app.principal);
      const res = await t().app.inject({
        method: 'POST', url: `/api/v1/devices/${device.id}/subscriptions`, headers: { authorization: app.auth },
        payload: { subscription: { eventType, url, ...extra } },
      });
      expect(res.statusCode).toBe(201);
      return { app, device, subscription: res.json().subscription };
    },
    /** Stores events the way every producer does (repos.events.insert in a transaction), then tells the bus. */
    async fire(events: (Partial<NewEvent> & { deviceId: string })[]) {
      const stored = await t().db.knex.transaction((trx) => t().repos.events.insert(events.map((e) => ({
        vehicleId: null, timestamp: new Date('2026-03-01T10:00:00.000Z'), eventType: 'startup', objectType: 'vehicle',
        objectId: null, meta: null, ...e,
      })), trx));
      bus.publishEvents(stored);
      return stored;
    },
    async notificationsOf(eventId: string) {
      return t().db.knex('notifications').where({ event_id: eventId });
    },
    async read(app: App, notificationId: string) {
      const res = await t().app.inject({ method: 'GET', url: `/api/v1/notifications/${notificationId}`, headers: { authorization: app.auth } });
      return res.json().notification;
    },
  };
}
