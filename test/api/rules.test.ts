import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { rulesRequests } from './rules.requests.js';
import { at, ingest } from '../db/rules.fixtures.js';

let t: TestApp;
beforeAll(async () => { t = await buildTestApp(); });
afterAll(async () => { await t?.close(); });

const BASE = 'http://localhost:3999';
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ring = [[-96.79, 32.78], [-96.79, 32.77], [-96.78, 32.77], [-96.79, 32.78]];
const boundaries = [
  { type: 'parametric', parameter: 'vehicleSpeed', min: 35, max: null },
  { type: 'radius', lon: -90.0811, lat: 29.9508, radius: 500 },
];

const { setup, post, get } = rulesRequests(() => t);

describe('POST /api/v1/devices/{deviceId}/rules', () => {
  it('creates a rule: 201, Location and the full rule with boundary ids', async () => {
    const { app, device } = await setup();
    const res = await post(app.auth, device.id, { name: 'Speed near Superdome', boundaries });
    expect(res.statusCode).toBe(201);
    const { rule } = res.json();
    expect(res.headers.location).toBe(`${BASE}/api/v1/rules/${rule.id}`);
    expect(rule.boundaries.map((b: { id: string }) => b.id)).toEqual([expect.stringMatching(UUID_RE), expect.stringMatching(UUID_RE)]);
    expect(rule).toEqual({
      id: expect.stringMatching(UUID_RE), name: 'Speed near Superdome', deviceId: device.id,
      boundaries: [
        { id: rule.boundaries[0].id, type: 'parametric', parameter: 'vehicleSpeed', min: 35, max: null },
        { id: rule.boundaries[1].id, type: 'radius', lon: -90.0811, lat: 29.9508, radius: 500 },
      ],
      evaluated: false, covered: false, createdAt: expect.any(String),
      object: { id: device.id, type: 'device' },
      links: {
        self: `${BASE}/api/v1/rules/${rule.id}`,
        events: `${BASE}/api/v1/devices/${device.id}/events?type=rule-*&objectId=${rule.id}`,
        subscriptions: `${BASE}/api/v1/devices/${device.id}/subscriptions?objectType=rule&objectId=${rule.id}`,
      },
    });
    expect(Math.abs(Date.parse(rule.createdAt) - Date.now())).toBeLessThan(10_000);
  });

  it('keeps a polygon boundary as given', async () => {
    const { app, device } = await setup();
    const res = await post(app.auth, device.id, { name: 'area', boundaries: [{ type: 'polygon', coordinates: [ring] }] });
    expect(res.statusCode).toBe(201);
    expect(res.json().rule.boundaries).toEqual([{ id: expect.stringMatching(UUID_RE), type: 'polygon', coordinates: [ring] }]);
  });

  const invalid: [string, unknown, string][] = [
    ['a missing name', { boundaries }, "body/rule must have required property 'name'"],
    ['a blank name', { name: '  ', boundaries }, 'rule.name must not be blank'],
    ['no boundaries', { name: 'x', boundaries: [] }, 'rule.boundaries must hold at least one boundary'],
    ['an unknown boundary type', { name: 'x', boundaries: [{ type: 'circle' }] },
      'rule.boundaries[0]: unknown boundary type "circle"; use parametric, radius, polygon or corridor'],
    ['an unknown parameter', { name: 'x', boundaries: [{ type: 'parametric', parameter: 'warpSpeed', min: 1 }] },
      'rule.boundaries[0] (parametric): unknown parameter "warpSpeed"'],
    ['a non-decimal parameter', { name: 'x', boundaries: [{ type: 'parametric', parameter: 'fuelType', min: 1 }] },
      'rule.boundaries[0] (parametric): parameter "fuelType" is not a decimal parameter; only decimal parameters can be used in rules'],
    ['min and max both null', { name: 'x', boundaries: [{ type: 'parametric', parameter: 'rpm', min: null, max: null }] },
      'rule.boundaries[0] (parametric): min and max cannot both be null'],
    ['min greater than max', { name: 'x', boundaries: [{ type: 'parametric', parameter: 'rpm', min: 3000, max: 1000 }] },
      'rule.boundaries[0] (parametric): min 3000 is greater than max 1000'],
    ['a string bound', { name: 'x', boundaries: [{ type: 'parametric', parameter: 'rpm', min: '10' }] },
      'body/rule/boundaries/0/min must be number,null'],
    ['a radius of 0', { name: 'x', boundaries: [{ type: 'radius', lon: 0, lat: 0, radius: 0 }] },
      'rule.boundaries[0] (radius): radius must be greater than 0 (meters), got 0'],
    ['a negative radius', { name: 'x', boundaries: [{ type: 'radius', lon: 0, lat: 0, radius: -5 }] },
      'rule.boundaries[0] (radius): radius must be greater than 0 (meters), got -5'],
    ['a longitude out of range', { name: 'x', boundaries: [{ type: 'radius', lon: 181, lat: 0, radius: 5 }] },
      'rule.boundaries[0] (radius): longitude 181 is out of range -180..180'],
    ['a latitude out of range', { name: 'x', boundaries: [{ type: 'radius', lon: 0, lat: -91, radius: 5 }] },
      'rule.boundaries[0] (radius): latitude -91 is out of range -90..90'],
    ['a missing radius', { name: 'x', boundaries: [{ type: 'radius', lon: 0, lat: 0 }] }, 'rule.boundaries[0] (radius): radius is required'],
    ['a field of another type', { name: 'x', boundaries: [{ type: 'radius', lon: 0, lat: 0, radius: 5, parameter: 'rpm' }] },
      'rule.boundaries[0] (radius): field "parameter" does not belong to a radius boundary (it takes lon, lat, radius, bufferMeters)'],
    ['a ring of 3 positions', { name: 'x', boundaries: [{ type: 'polygon', coordinates: [[[0, 0], [1, 0], [0, 0]]] }] },
      'rule.boundaries[0] (polygon): ring 0 has 3 positions; a ring needs at least 4 (the first repeated as the last)'],
    ['a ring not closed', { name: 'x', boundaries: [{ type: 'polygon', coordinates: [[[0, 0], [1, 0], [1, 1], [0, 1]]] }] },
      'rule.boundaries[0] (polygon): ring 0 is not closed: its first position [0,0] differs from its last [0,1]'],
    ['a polygon latitude out of range', { name: 'x', boundaries: [{ type: 'polygon', coordinates: [[[0, 0], [1, 95], [1, 1], [0, 0]]] }] },
      'rule.boundaries[0] (polygon): ring 0 position 1: latitude 95 is out of range -90..90'],
    ['a position with altitude', { name: 'x', boundaries: [{ type: 'polygon', coordinates: [[[0, 0, 5], [1, 0], [1, 1], [0, 0]]] }] },
      'rule.boundaries[0] (polygon): ring 0 position 0 must be [longitude, latitude], got 3 numbers'],
    ['a self-intersecting ring', { name: 'x', boundaries: [{ type: 'polygon', coordinates: [[[0, 0], [1, 1], [1, 0], [0, 1], [0, 0]]] }] },
      'rule.boundaries[0] (polygon): ring 0 is not a valid ring: Self-intersection[0.5 0.5]'],
    ['a hole outside its shell', { name: 'x', boundaries: [{ type: 'polygon', coordinates: [
      [[0, 0], [1, 0], [1, 1], [0, 1], [0, 0]], [[5, 5], [6, 5], [6, 6], [5, 6], [5, 5]]] }] },
    'rule.boundaries[0] (polygon): its rings do not form a valid polygon: Hole lies outside shell[5 5]'],
    ['two geographic boundaries', { name: 'x', boundaries: [{ type: 'radius', lon: 0, lat: 0, radius: 5 }, boundaries[0],
      { type: 'polygon', coordinates: [ring] }] },
    'a rule has at most one geographic (radius, polygon or corridor) boundary; rule.boundaries[0], rule.boundaries[2] are all geographic'],
  ];
  for (const [what, rule, message] of invalid) {
    it(`refuses ${what} with a 400 that says why`, async () => {
      const { app, device } = await setup();
      const res = await post(app.auth, device.id, rule);
      expect(res.json()).toEqual({ statusCode: 400, error: 'Bad Request', message });
      expect(await t.db.knex('rules').where('device_id', device.id).count({ n: '*' })).toEqual([{ n: 0 }]);
    });
  }

  it('names the boundary at fault among several', async () => {
    const { app, device } = await setup();
    const res = await post(app.auth, device.id, { name: 'x', boundaries: [boundaries[0], { type: 'parametric', parameter: 'rpm', min: 5, max: 1 }] });
    expect(res.json().message).toBe('rule.boundaries[1] (parametric): min 5 is greater than max 1');
  });

  it('answers 404 for a device the application cannot read', async () => {
    const { device } = await setup();
    const other = await t.make.application();
    const res = await post(other.auth, device.id, { name: 'x', boundaries });
    expect(res.json()).toEqual({ statusCode: 404, error: 'Not Found', message: 'Not found' });
  });
});

describe('reading and deleting rules', () => {
  it('gets a rule with its boundaries and current state', async () => {
    const { app, device } = await setup();
    const { rule } = (await post(app.auth, device.id, { name: 'fast', boundaries: [boundaries[0]] })).json();
    await ingest(t, device.id, [{ ts: at(0), data: { vehicleSpeed: 50 } }]);
    const res = await get(app.auth, `/api/v1/rules/${rule.id}`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ rule: { ...rule, evaluated: true, covered: true } });
  });

  it('lists the application\'s rules of a device newest first, without boundaries, with offset pagination', async () => {
    const { app, device } = await setup();
    const ids: string[] = [];
    for (const name of ['r1', 'r2', 'r3']) ids.push((await post(app.auth, device.id, { name, boundaries: [boundaries[0]] })).json().rule.id);
    const other = await t.make.application('consumer');
    await t.repos.devices.authorize(device.id, other.id);
    await post(other.auth, device.id, { name: 'theirs', boundaries: [boundaries[0]] });
    const res = await get(app.auth, `/api/v1/devices/${device.id}/rules?limit=2`);
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.rules.map((r: { name: string }) => r.name)).toEqual(['r3', 'r2']);
    expect(body.rules[0]).toEqual({
      id: ids[2], name: 'r3', deviceId: device.id, evaluated: false, covered: false, createdAt: expect.any(String),
      links: {
        self: `${BASE}/api/v1/rules/${ids[2]}`,
        events: `${BASE}/api/v1/devices/${device.id}/events?type=rule-*&objectId=${ids[2]}`,
        subscriptions: `${BASE}/api/v1/devices/${device.id}/subscriptions?objectType=rule&objectId=${ids[2]}`,
      },
    });
    const path = `${BASE}/api/v1/devices/${device.id}/rules`;
    expect(body.meta).toEqual({ pagination: { total: 3, offset: 0, limit: 2, links: {
      first: `${path}?offset=0&limit=2`, last: `${path}?offset=2&limit=2`, next: `${path}?offset=2&limit=2`,
    } } });
    const next = (await get(app.auth, `/api/v1/devices/${device.id}/rules?offset=2&limit=2`)).json();
    expect(next.rules.map((r: { name: string }) => r.name)).toEqual(['r1']);
  });

  it('hides a rule from another application that can read the device (404)', async () => {
    const { app, device } = await setup();
    const { rule } = (await post(app.auth, device.id, { name: 'mine', boundaries })).json();
    const other = await t.make.application('consumer');
    await t.repos.devices.authorize(device.id, other.id);
    for (const res of [await get(other.auth, `/api/v1/rules/${rule.id}`),
      await t.app.inject({ method: 'DELETE', url: `/api/v1/rules/${rule.id}`, headers: { authorization: other.auth } })]) {
      expect(res.json()).toEqual({ statusCode: 404, error: 'Not Found', message: 'Not found' });
    }
    expect((await get(other.auth, `/api/v1/devices/${device.id}/rules`)).json().rules).toEqual([]);
    expect((await get(app.auth, `/api/v1/rules/${rule.id}`)).statusCode).toBe(200);
  });

  it('deletes a rule: 204, then 404', async () => {
    const { app, device } = await setup();
    const { rule } = (await post(app.auth, device.id, { name: 'gone', boundaries })).json();
    const del = await t.app.inject({ method: 'DELETE', url: `/api/v1/rules/${rule.id}`, headers: { authorization: app.auth } });
    expect([del.statusCode, del.body]).toEqual([204, '']);
    expect((await get(app.auth, `/api/v1/rules/${rule.id}`)).statusCode).toBe(404);
    expect(await t.db.knex('rule_boundaries').where('rule_id', rule.id).count({ n: '*' })).toEqual([{ n: 0 }]);
  });

  it("deletes a rule's subscriptions with it, and leaves the device's others", async () => {
    const { app, device } = await setup();
    const { rule } = (await post(app.auth, device.id, { name: 'watched', boundaries })).json();
    const subscribe = async (subscription: object) => (await t.app.inject({
      method: 'POST', url: `/api/v1/devices/${device.id}/subscriptions`, headers: { authorization: app.auth }, payload: { subscription },
    })).json().subscription.id as string;
    const onRule = await subscribe({ eventType: 'rule-*', url: 'https://receiver.example.com/r', object: { type: 'rule', id: rule.id } });
    const onStartup = await subscribe({ eventType: 'startup', url: 'https://receiver.example.com/s' });
    await t.app.inject({ method: 'DELETE', url: `/api/v1/rules/${rule.id}`, headers: { authorization: app.auth } });
    expect((await get(app.auth, `/api/v1/subscriptions/${onRule}`)).statusCode).toBe(404);
    expect((await get(app.auth, `/api/v1/subscriptions/${onStartup}`)).statusCode).toBe(200);
    expect((await get(app.auth, `/api/v1/devices/${device.id}/subscriptions`)).json().subscriptions.map((x: { id: string }) => x.id))
      .toEqual([onStartup]);
  });

  it('removes the application\'s rules of a device on deregistration, not another application\'s', async () => {
    const { app, device } = await setup();
    const other = await t.make.application();
    await t.repos.devices.authorize(device.id, other.id);
    await t.repos.devices.register(other.id, device.id);
    const { rule: mine } = (await post(app.auth, device.id, { name: 'mine', boundaries })).json();
    const { rule: theirs } = (await post(other.auth, device.id, { name: 'theirs', boundaries })).json();
    const res = await t.app.inject({ method: 'DELETE', url: `/api/v1/devices/${device.id}`, headers: { authorization: app.auth } });
    expect(res.statusCode).toBe(204);
    expect((await t.db.knex('rules').select('id').where('device_id', device.id)).map((r: { id: string }) => r.id)).toEqual([theirs.id]);
    expect(await t.db.knex('rule_states').where('rule_id', mine.id).count({ n: '*' })).toEqual([{ n: 0 }]);
  });

  it('answers 400 for a rule id that is not a UUID', async () => {
    const { app } = await setup();
    const res = await get(app.auth, '/api/v1/rules/nope');
    expect(res.json()).toEqual({ statusCode: 400, error: 'Bad Request', message: 'params/ruleId must match format "uuid"' });
  });
});
