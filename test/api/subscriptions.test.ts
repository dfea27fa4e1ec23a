import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => { t = await buildTestApp(); });
afterAll(async () => { await t?.close(); });

const B = 'http://localhost:3999/api/v1';
type App = Awaited<ReturnType<TestApp['make']['application']>>;

async function setup() {
  const app = await t.make.application();
  const device = await t.make.device(app.principal);
  return { app, device };
}
const post = (app: App, deviceId: string, subscription: unknown) => t.app.inject({
  method: 'POST', url: `/api/v1/devices/${deviceId}/subscriptions`, headers: { authorization: app.auth }, payload: { subscription },
});
const call = (app: App, method: 'GET' | 'PUT' | 'DELETE', url: string, payload?: unknown) =>
  t.app.inject({ method, url, headers: { authorization: app.auth }, ...(payload ? { payload } : {}) });

async function makeRule(appId: string, deviceId: string): Promise<string> {
  const id = randomUUID();
  await t.db.knex('rules').insert({ id, application_id: appId, device_id: deviceId, name: 'depot', created_at: new Date() });
  return id;
}

describe('POST /devices/{deviceId}/subscriptions', () => {
  it('creates a subscription: 201, Location of the subscription, object and appData null when not given', async () => {
    const { app, device } = await setup();
    const res = await post(app, device.id, { eventType: 'startup', url: 'http://127.0.0.1:9/hook' });
    expect(res.statusCode).toBe(201);
    const s = res.json().subscription;
    expect(res.headers.location).toBe(`${B}/subscriptions/${s.id}`);
    expect(s).toEqual({
      id: s.id, deviceId: device.id, eventType: 'startup', url: 'http://127.0.0.1:9/hook', object: null, appData: null,
      createdAt: s.createdAt, updatedAt: s.createdAt,
      delivery: { state: 'active', consecutiveFailures: 0, failingSince: null, pausedAt: null },
      links: { self: `${B}/subscriptions/${s.id}`, notifications: `${B}/subscriptions/${s.id}/notifications` },
    });
    expect(Date.parse(s.createdAt)).toBeGreaterThan(Date.now() - 60_000);
  });

  it('creates a rule-* subscription naming a rule of the device, with appData echoed', async () => {
    const { app, device } = await setup();
    const ruleId = await makeRule(app.id, device.id);
    const res = await post(app, device.id, { eventType: 'rule-*', url: 'https://hooks.example.com/n', object: { type: 'rule', id: ruleId }, appData: '{"k":1}' });
    expect(res.statusCode).toBe(201);
    expect(res.json().subscription).toMatchObject({ eventType: 'rule-*', object: { id: ruleId, type: 'rule' }, appData: '{"k":1}' });
  });

  it('accepts an optional vehicle object as a filter for vehicle events', async () => {
    const { app, device } = await setup();
    const vehicleId = randomUUID();
    const res = await post(app, device.id, { eventType: 'startup', url: 'http://127.0.0.1:9/v', object: { type: 'vehicle', id: vehicleId } });
    expect(res.statusCode).toBe(201);
    expect(res.json().subscription.object).toEqual({ id: vehicleId, type: 'vehicle' });
  });

  it('refuses each bad input with a 400 that says what is wrong', async () => {
    const { app, device } = await setup();
    const other = await setup();
    const foreignRule = await makeRule(other.app.id, other.device.id);
    const ruleOfOtherApp = await makeRule(other.app.id, device.id);
    const ok = { eventType: 'startup', url: 'http://127.0.0.1:9/x' };
    const cases: [unknown, RegExp][] = [
      [{ url: ok.url }, /eventType/],
      [{ eventType: 'startup' }, /url/],
      [{ ...ok, eventType: 'sunrise' }, /eventType must be one of startup, shutdown.*got "sunrise"/],
      [{ ...ok, eventType: 'toString' }, /eventType must be one of .*got "toString"/],
      [{ ...ok, url: 'not a url' }, /url must be an absolute http or https URL/],
      [{ ...ok, url: 'ftp://files.example.com/x' }, /url must use http or https, got "ftp"/],
      [{ ...ok, url: 42 }, /url must be string/],
      [{ ...ok, appData: { a: 1 } }, /appData/],
      [{ eventType: 'rule-enter', url: ok.url }, /object \{type: "rule", id\} is required for rule-enter/],
      [{ eventType: 'rule-leave', url: ok.url, object: { type: 'rule', id: randomUUID() } }, /is not a rule of device/],
      [{ eventType: 'rule-*', url: ok.url, object: { type: 'rule', id: foreignRule } }, /is not a rule of device/],
      [{ eventType: 'rule-*', url: ok.url, object: { type: 'rule', id: ruleOfOtherApp } }, /owned by this application/],
      [{ eventType: 'rule-*', url: ok.url, object: { type: 'vehicle', id: randomUUID() } }, /object.type must be "rule", got "vehicle"/],
      [{ ...ok, object: { type: 'trip', id: randomUUID() } }, /startup events are about a vehicle; object.type must be "vehicle"/],
      [{ ...ok, object: { type: 'vehicle', id: 'v1' } }, /object\/id must match format "uuid"/],
    ];
    for (const [body, message] of cases) {
      const res = await post(app, device.id, body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json().message, JSON.stringify(body)).toMatch(message);
    }
    const noRoot = await t.app.inject({ method: 'POST', url: `/api/v1/devices/${device.id}/subscriptions`, headers: { authorization: app.auth }, payload: {} });
    expect(noRoot.statusCode).toBe(400);
    expect(noRoot.json().message).toMatch(/subscription/);
  });

  it("answers 404 for another application's device and an unknown device", async () => {
    const { app } = await setup();
    const other = await setup();
    for (const id of [other.device.id, randomUUID()]) {
      expect((await post(app, id, { eventType: 'startup', url: 'http://127.0.0.1:9/x' })).statusCode).toBe(404);
    }
  });
});

describe('GET /devices/{deviceId}/subscriptions', () => {
  it('lists the application’s subscriptions of the device newest first, with offset pagination and object filters kept in links', async () => {
    const { app, device } = await setup();
    const ruleId = await makeRule(app.id, device.id);
    const a = (await post(app, device.id, { eventType: 'startup', url: 'http://127.0.0.1:9/a' })).json().subscription;
    const b = (await post(app, device.id, { eventType: 'rule-enter', url: 'http://127.0.0.1:9/b', object: { type: 'rule', id: ruleId } })).json().subscription;
    const c = (await post(app, device.id, { eventType: 'rule-leave', url: 'http://127.0.0.1:9/c', object: { type: 'rule', id: ruleId } })).json().subscription;
    const other = await t.make.application();
    await t.repos.devices.authorize(device.id, other.id);
    await t.repos.devices.register(other.id, device.id);
    await post(other, device.id, { eventType: 'startup', url: 'http://127.0.0.1:9/other' });

    const all = (await call(app, 'GET', `/api/v1/devices/${device.id}/subscriptions`)).json();
    expect(all.subscriptions.map((s: any) => s.id)).toEqual([c.id, b.id, a.id]);
    expect(all.meta.pagination.total).toBe(3);

    const url = `/api/v1/devices/${device.id}/subscriptions?objectType=rule&objectId=${ruleId}&limit=1`;
    const page = (await call(app, 'GET', url)).json();
    expect(page.subscriptions.map((s: any) => s.id)).toEqual([c.id]);
    const q = `objectType=rule&objectId=${ruleId}`;
    expect(page.meta.pagination).toEqual({
      total: 2, offset: 0, limit: 1,
      links: {
        first: `${B}/devices/${device.id}/subscriptions?${q}&offset=0&limit=1`,
        last: `${B}/devices/${device.id}/subscriptions?${q}&offset=1&limit=1`,
        next: `${B}/devices/${device.id}/subscriptions?${q}&offset=1&limit=1`,
      },
    });
    const empty = await call(app, 'GET', `/api/v1/devices/${device.id}/subscriptions?objectId=`);
    expect(empty.json().meta.pagination.total).toBe(3);
    const bad = await call(app, 'GET', `/api/v1/devices/${device.id}/subscriptions?objectId=nope`);
    expect(bad.statusCode).toBe(400);
    expect(bad.json().message).toBe('objectId must be a UUID, got "nope"');
  });

  it("answers 404 for another application's device", async () => {
    const { app } = await setup();
    const other = await setup();
    expect((await call(app, 'GET', `/api/v1/devices/${other.device.id}/subscriptions`)).statusCode).toBe(404);
  });
});

describe('GET, PUT, DELETE /subscriptions/{id}', () => {
  it('gets one subscription, changes only url and appData, and deletes it', async () => {
    const { app, device } = await setup();
    const s = (await post(app, device.id, { eventType: 'shutdown', url: 'http://127.0.0.1:9/a', appData: 'one' })).json().subscription;
    expect((await call(app, 'GET', `/api/v1/subscriptions/${s.id}`)).json()).toEqual({ subscription: s });

    const put = await call(app, 'PUT', `/api/v1/subscriptions/${s.id}`, { subscription: { ...s, url: 'http://127.0.0.1:9/b', appData: 'two' } });
    expect(put.statusCode).toBe(200);
    const changed = put.json().subscription;
    expect(changed).toEqual({ ...s, url: 'http://127.0.0.1:9/b', appData: 'two', updatedAt: changed.updatedAt });
    expect(Date.parse(changed.updatedAt)).toBeGreaterThanOrEqual(Date.parse(s.updatedAt));

    const cleared = await call(app, 'PUT', `/api/v1/subscriptions/${s.id}`, { subscription: { appData: null } });
    expect(cleared.json().subscription).toMatchObject({ url: 'http://127.0.0.1:9/b', appData: null });

    expect((await call(app, 'DELETE', `/api/v1/subscriptions/${s.id}`)).statusCode).toBe(204);
    expect((await call(app, 'GET', `/api/v1/subscriptions/${s.id}`)).statusCode).toBe(404);
    expect((await call(app, 'DELETE', `/api/v1/subscriptions/${s.id}`)).statusCode).toBe(404);
  });

  it('refuses to change eventType or object, an empty change and a bad url', async () => {
    const { app, device } = await setup();
    const s = (await post(app, device.id, { eventType: 'shutdown', url: 'http://127.0.0.1:9/a' })).json().subscription;
    const cases: [unknown, string][] = [
      [{ eventType: 'startup', url: 'http://127.0.0.1:9/b' }, 'eventType cannot be changed; create a new subscription instead'],
      [{ object: { type: 'vehicle', id: randomUUID() } }, 'object cannot be changed; create a new subscription instead'],
      [{}, 'give url, appData and/or delivery.state to change'],
      [{ url: 'mailto:me@example.com' }, 'url must use http or https, got "mailto"'],
    ];
    for (const [subscription, message] of cases) {
      const res = await call(app, 'PUT', `/api/v1/subscriptions/${s.id}`, { subscription });
      expect(res.statusCode).toBe(400);
      expect(res.json().message).toBe(message);
    }
  });

  it("answers 404 to another application reading, changing or deleting a subscription", async () => {
    const { app, device } = await setup();
    const other = await t.make.application();
    await t.repos.devices.authorize(device.id, other.id);
    await t.repos.devices.register(other.id, device.id);
    const s = (await post(app, device.id, { eventType: 'shutdown', url: 'http://127.0.0.1:9/a' })).json().subscription;
    expect((await call(other, 'GET', `/api/v1/subscriptions/${s.id}`)).statusCode).toBe(404);
    expect((await call(other, 'PUT', `/api/v1/subscriptions/${s.id}`, { subscription: { url: 'http://127.0.0.1:9/z' } })).statusCode).toBe(404);
    expect((await call(other, 'DELETE', `/api/v1/subscriptions/${s.id}`)).statusCode).toBe(404);
    expect((await call(other, 'GET', `/api/v1/subscriptions/${s.id}/notifications`)).statusCode).toBe(404);
    expect((await call(app, 'GET', `/api/v1/subscriptions/${s.id}`)).json().subscription.url).toBe('http://127.0.0.1:9/a');
  });

  it("deregistering the device removes the application's subscriptions of it, not another application's", async () => {
    const { app, device } = await setup();
    const other = await t.make.application();
    await t.repos.devices.authorize(device.id, other.id);
    await t.repos.devices.register(other.id, device.id);
    const mine = (await post(app, device.id, { eventType: 'shutdown', url: 'http://127.0.0.1:9/a' })).json().subscription;
    const theirs = (await post(other, device.id, { eventType: 'shutdown', url: 'http://127.0.0.1:9/b' })).json().subscription;
    expect((await call(app, 'DELETE', `/api/v1/devices/${device.id}`)).statusCode).toBe(204);
    expect(await t.db.knex('subscriptions').where({ id: mine.id }).first()).toBeUndefined();
    expect((await call(other, 'GET', `/api/v1/subscriptions/${theirs.id}`)).statusCode).toBe(200);
  });
});

describe('OpenAPI', () => {
  it('documents every subscription and notification route', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json();
    const routes = Object.entries(doc.paths as Record<string, Record<string, unknown>>)
      .flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`))
      .filter((r) => /subscriptions|notifications/.test(r)).sort();
    expect(routes).toEqual([
      'DELETE /api/v1/subscriptions/{subscriptionId}',
      'GET /api/v1/devices/{deviceId}/subscriptions',
      'GET /api/v1/events/{eventId}/notifications',
      'GET /api/v1/notifications/{notificationId}',
      'GET /api/v1/subscriptions/{subscriptionId}',
      'GET /api/v1/subscriptions/{subscriptionId}/notifications',
      'POST /api/v1/devices/{deviceId}/subscriptions',
      'PUT /api/v1/subscriptions/{subscriptionId}',
    ]);
    expect(doc.paths['/api/v1/notifications/{notificationId}'].get.responses['200']).toBeDefined();
  });
});
