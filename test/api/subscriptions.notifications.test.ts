import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import type { NewEvent } from '../../db/repositories/events.repository.js';

let t: TestApp;
beforeAll(async () => { t = await buildTestApp(); });
afterAll(async () => { await t?.close(); });

const B = 'http://localhost:3999/api/v1';
type App = Awaited<ReturnType<TestApp['make']['application']>>;

const subscribe = async (app: App, deviceId: string, subscription: Record<string, unknown>) => {
  const res = await t.app.inject({
    method: 'POST', url: `/api/v1/devices/${deviceId}/subscriptions`, headers: { authorization: app.auth }, payload: { subscription },
  });
  expect(res.statusCode).toBe(201);
  return res.json().subscription as { id: string; url: string };
};
const get = (app: App, url: string) => t.app.inject({ method: 'GET', url, headers: { authorization: app.auth } });
const insert = (events: Partial<NewEvent>[]) => t.db.knex.transaction((trx) => t.repos.events.insert(events.map((e) => ({
  deviceId: '', vehicleId: null, timestamp: new Date('2026-03-01T10:00:00.000Z'), eventType: 'startup', objectType: 'vehicle',
  objectId: null, meta: null, ...e,
})), trx));
const notificationsOf = (eventId: string) => t.db.knex('notifications').where({ event_id: eventId }).orderBy('url');
async function sharedDevice() {
  const app = await t.make.application();
  const device = await t.make.device(app.principal);
  const other = await t.make.application();
  await t.repos.devices.authorize(device.id, other.id);
  await t.repos.devices.register(other.id, device.id);
  return { app, device, other };
}

describe('notifications made when events are stored', () => {
  it('makes one queued notification per matching subscription, with the url copied and no payload yet', async () => {
    const { app, device, other } = await sharedDevice();
    const vehicle = randomUUID();
    await subscribe(app, device.id, { eventType: 'startup', url: 'http://127.0.0.1:9/a-any' });
    await subscribe(app, device.id, { eventType: 'shutdown', url: 'http://127.0.0.1:9/a-shutdown' });
    await subscribe(app, device.id, { eventType: 'startup', url: 'http://127.0.0.1:9/a-vehicle', object: { type: 'vehicle', id: vehicle } });
    await subscribe(app, device.id, { eventType: 'startup', url: 'http://127.0.0.1:9/a-other-vehicle', object: { type: 'vehicle', id: randomUUID() } });
    await subscribe(other, device.id, { eventType: 'startup', url: 'http://127.0.0.1:9/b-any' });
    const consumer = await t.make.application('consumer');
    await t.repos.devices.authorize(device.id, consumer.id);
    await subscribe(consumer, device.id, { eventType: 'startup', url: 'http://127.0.0.1:9/c-revoked' });
    await t.repos.devices.revoke(device.id, consumer.id);

    const [event] = await insert([{ deviceId: device.id, vehicleId: vehicle, objectId: vehicle }]);
    const rows = await notificationsOf(event.id);
    expect(rows.map((r) => [r.url, r.state, r.payload, r.attempts, r.response_code])).toEqual([
      ['http://127.0.0.1:9/a-any', 'queued', null, 0, null],
      ['http://127.0.0.1:9/a-vehicle', 'queued', null, 0, null],
      ['http://127.0.0.1:9/b-any', 'queued', null, 0, null],
    ]);
  });

  it("matches rule events to rule-* and same-type subscriptions of the rule's application only", async () => {
    const { app, device, other } = await sharedDevice();
    const rule = randomUUID();
    await t.db.knex('rules').insert({ id: rule, application_id: app.id, device_id: device.id, name: 'depot', created_at: new Date() });
    await subscribe(app, device.id, { eventType: 'rule-*', url: 'http://127.0.0.1:9/a-star', object: { type: 'rule', id: rule } });
    await subscribe(app, device.id, { eventType: 'rule-enter', url: 'http://127.0.0.1:9/a-enter', object: { type: 'rule', id: rule } });
    await subscribe(app, device.id, { eventType: 'rule-leave', url: 'http://127.0.0.1:9/a-leave', object: { type: 'rule', id: rule } });
    // Made without the API's checks: an object-less rule-* subscription of another application.
    await t.repos.subscriptions.create(other.principal, { deviceId: device.id, eventType: 'rule-*', url: 'http://127.0.0.1:9/b-star', object: null, appData: null });

    const [enter, leave] = await insert([
      { deviceId: device.id, applicationId: app.id, eventType: 'rule-enter', objectType: 'rule', objectId: rule, meta: { direction: 'enter' } },
      { deviceId: device.id, applicationId: app.id, eventType: 'rule-leave', objectType: 'rule', objectId: rule, meta: { direction: 'leave' } },
    ]);
    expect((await notificationsOf(enter.id)).map((r) => r.url)).toEqual(['http://127.0.0.1:9/a-enter', 'http://127.0.0.1:9/a-star']);
    expect((await notificationsOf(leave.id)).map((r) => r.url)).toEqual(['http://127.0.0.1:9/a-leave', 'http://127.0.0.1:9/a-star']);
  });

  it('makes no notification when the events are stored without a matching subscription', async () => {
    const app = await t.make.application();
    const device = await t.make.device(app.principal);
    await subscribe(app, device.id, { eventType: 'collision', url: 'http://127.0.0.1:9/x' });
    const [event] = await insert([{ deviceId: device.id, eventType: 'phone-home' }]);
    expect(await notificationsOf(event.id)).toEqual([]);
  });
});

describe('notification reads', () => {
  it('shows a queued notification without response fields, by id, per subscription and per event', async () => {
    const { app, device, other } = await sharedDevice();
    const s = await subscribe(app, device.id, { eventType: 'shutdown', url: 'http://127.0.0.1:9/r' });
    await subscribe(other, device.id, { eventType: 'shutdown', url: 'http://127.0.0.1:9/other' });
    const [e1] = await insert([{ deviceId: device.id, eventType: 'shutdown', timestamp: new Date('2026-03-01T10:00:00.000Z') }]);
    await new Promise((r) => setTimeout(r, 5)); // distinct createdAt milliseconds, so the pages split between them
    const [e2] = await insert([{ deviceId: device.id, eventType: 'shutdown', timestamp: new Date('2026-03-01T11:00:00.000Z') }]);
    const [n1] = await t.db.knex('notifications').where({ event_id: e1.id, subscription_id: s.id });
    const [n2] = await t.db.knex('notifications').where({ event_id: e2.id, subscription_id: s.id });

    const one = (await get(app, `/api/v1/notifications/${n1.id}`)).json().notification;
    expect(one).toEqual({
      id: n1.id, eventId: e1.id, eventType: 'shutdown', eventTimestamp: '2026-03-01T10:00:00.000Z', subscriptionId: s.id,
      url: 'http://127.0.0.1:9/r', payload: null, state: 'queued', createdAt: n1.created_at.toISOString(), attempts: 0,
      links: { self: `${B}/notifications/${n1.id}`, event: `${B}/events/${e1.id}`, subscription: `${B}/subscriptions/${s.id}` },
    });

    const page = (await get(app, `/api/v1/subscriptions/${s.id}/notifications?limit=1`)).json();
    expect(page.notifications.map((n: any) => n.id)).toEqual([n2.id]);
    expect(page.meta.pagination).toMatchObject({ remaining: 1, limit: 1, sortDir: 'desc' });
    expect(page.meta.pagination.links.prior).toBe(
      `${B}/subscriptions/${s.id}/notifications?limit=1&until=${n2.created_at.getTime() - 1}`);
    const priorUrl = new URL(page.meta.pagination.links.prior);
    const prior = (await get(app, priorUrl.pathname + priorUrl.search)).json();
    expect(prior.notifications.map((n: any) => n.id)).toEqual([n1.id]);
    expect(prior.meta.pagination.links).toEqual({});

    const perEvent = (await get(app, `/api/v1/events/${e1.id}/notifications`)).json();
    expect(perEvent.notifications).toEqual([one]);
  });

  it("answers 404 for another application's notification and for an event of a device it cannot read", async () => {
    const { app, device, other } = await sharedDevice();
    await subscribe(app, device.id, { eventType: 'shutdown', url: 'http://127.0.0.1:9/r' });
    const [event] = await insert([{ deviceId: device.id, eventType: 'shutdown' }]);
    const [n] = await notificationsOf(event.id);
    expect((await get(other, `/api/v1/notifications/${n.id}`)).statusCode).toBe(404);
    expect((await get(other, `/api/v1/events/${event.id}/notifications`)).json().notifications).toEqual([]);
    const stranger = await t.make.application();
    expect((await get(stranger, `/api/v1/events/${event.id}/notifications`)).statusCode).toBe(404);
    expect((await get(app, `/api/v1/notifications/${randomUUID()}`)).statusCode).toBe(404);
  });

  it('deleting a subscription deletes its notifications', async () => {
    const app = await t.make.application();
    const device = await t.make.device(app.principal);
    const s = await subscribe(app, device.id, { eventType: 'shutdown', url: 'http://127.0.0.1:9/r' });
    const [event] = await insert([{ deviceId: device.id, eventType: 'shutdown' }]);
    expect(await notificationsOf(event.id)).toHaveLength(1);
    await t.app.inject({ method: 'DELETE', url: `/api/v1/subscriptions/${s.id}`, headers: { authorization: app.auth } });
    expect(await notificationsOf(event.id)).toEqual([]);
  });
});
