import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => { t = await buildTestApp(); });
afterAll(async () => { await t?.close(); });

const get = (auth: string, url: string) => t.app.inject({ method: 'GET', url, headers: { authorization: auth } });
const BASE = 'http://localhost:3999';

describe('GET /api/v1/devices', () => {
  it('lists the devices registered with the application in the order they were added, each with its fields and links', async () => {
    const app = await t.make.application();
    const a = await t.make.device(app.principal, { name: 'first' });
    const b = await t.make.device(app.principal, { name: 'second' });
    const res = await get(app.auth, '/api/v1/devices');
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.devices.map((d: any) => d.id)).toEqual([a.id, b.id]);
    expect(body.devices[0]).toEqual({
      id: a.id, name: 'first', chipId: a.chipId, createdAt: a.createdAt.toISOString(), icon: expect.stringMatching(/^https:\/\//),
      status: { online: false, lastSeenAt: null, lastConnectedAt: null },
      links: {
        self: `${BASE}/api/v1/devices/${a.id}`,
        vehicles: `${BASE}/api/v1/devices/${a.id}/vehicles`,
        latestVehicle: `${BASE}/api/v1/devices/${a.id}/vehicles/_latest`,
        rules: `${BASE}/api/v1/devices/${a.id}/rules`,
        events: `${BASE}/api/v1/devices/${a.id}/events`,
        subscriptions: `${BASE}/api/v1/devices/${a.id}/subscriptions`,
        trips: `${BASE}/api/v1/devices/${a.id}/trips`,
        commands: `${BASE}/api/v1/devices/${a.id}/commands`,
      },
    });
    expect(body.meta).toEqual({ pagination: { total: 2, offset: 0, limit: 20, links: {
      first: `${BASE}/api/v1/devices?offset=0&limit=20`, last: `${BASE}/api/v1/devices?offset=0&limit=20` } } });
  });

  it('walks offset pagination to the end through next links', async () => {
    const app = await t.make.application();
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) ids.push((await t.make.device(app.principal)).id);
    const seen: string[] = [];
    let url: string | undefined = '/api/v1/devices?limit=3';
    const pages: any[] = [];
    while (url) {
      const body: any = (await get(app.auth, url.replace(BASE, ''))).json();
      pages.push(body.meta.pagination);
      seen.push(...body.devices.map((d: any) => d.id));
      url = body.meta.pagination.links.next;
    }
    expect(seen).toEqual(ids);
    expect(pages.map((p) => p.offset)).toEqual([0, 3, 6]);
    expect(pages[0].links.last).toBe(`${BASE}/api/v1/devices?offset=6&limit=3`);
    expect(pages[0].links.prev).toBeUndefined();
    expect(pages[2].links.prev).toBe(`${BASE}/api/v1/devices?offset=3&limit=3`);
    expect(pages.every((p) => p.total === 7 && p.limit === 3)).toBe(true);
  });

  it('clamps limit to 100 and refuses a limit that is not a positive integer', async () => {
    const app = await t.make.application();
    expect((await get(app.auth, '/api/v1/devices?limit=500')).json().meta.pagination.limit).toBe(100);
    const bad = await get(app.auth, '/api/v1/devices?limit=abc');
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toEqual({ statusCode: 400, error: 'Bad Request', message: 'limit must be an integer ≥ 1, got "abc"' });
    expect((await get(app.auth, '/api/v1/devices?limit=&offset=')).json().meta.pagination).toMatchObject({ limit: 20, offset: 0 });
  });

  it('shows a consumer application the devices whose owners authorized it, without registration', async () => {
    const consumer = await t.make.application('consumer');
    const d = await t.make.device(consumer.principal);
    const body = (await get(consumer.auth, '/api/v1/devices')).json();
    expect(body.devices.map((x: any) => x.id)).toEqual([d.id]);
  });

  it('hides an authorized but unregistered device from an Enterprise application', async () => {
    const app = await t.make.application();
    const d = await t.make.device(app.principal, { register: false });
    expect((await get(app.auth, '/api/v1/devices')).json().devices).toEqual([]);
    expect((await get(app.auth, `/api/v1/devices/${d.id}`)).statusCode).toBe(404);
  });
});

describe('GET /api/v1/devices/{id}', () => {
  it('answers the device, and 404 with the error body for a device of another application', async () => {
    const a = await t.make.application();
    const b = await t.make.application();
    const d = await t.make.device(a.principal);
    expect((await get(a.auth, `/api/v1/devices/${d.id}`)).json().device.id).toBe(d.id);
    const res = await get(b.auth, `/api/v1/devices/${d.id}`);
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ statusCode: 404, error: 'Not Found', message: 'Not found' });
  });
});

describe('POST /api/v1/devices (register)', () => {
  it('registers an authorized device: 201, Location, self/groups/vehicles/latestVehicle links', async () => {
    const app = await t.make.application();
    const d = await t.make.device(app.principal, { register: false });
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/devices', headers: { authorization: app.auth }, payload: { device: { id: d.id } } });
    expect(res.statusCode).toBe(201);
    expect(res.headers.location).toBe(`${BASE}/api/v1/devices/${d.id}`);
    expect(Object.keys(res.json().device.links)).toEqual(['self', 'groups', 'vehicles', 'latestVehicle']);
    expect((await get(app.auth, '/api/v1/devices')).json().devices.map((x: any) => x.id)).toEqual([d.id]);
  });

  it('answers 404 for a device its owner has not authorized for the application', async () => {
    const a = await t.make.application();
    const b = await t.make.application();
    const d = await t.make.device(a.principal);
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/devices', headers: { authorization: b.auth }, payload: { device: { id: d.id } } });
    expect(res.statusCode).toBe(404);
    expect((await get(b.auth, '/api/v1/devices')).json().devices).toEqual([]);
  });

  it('is for Enterprise applications only', async () => {
    const consumer = await t.make.application('consumer');
    const d = await t.make.device(consumer.principal);
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/devices', headers: { authorization: consumer.auth }, payload: { device: { id: d.id } } });
    expect(res.statusCode).toBe(403);
    expect(res.json().message).toBe('Only Enterprise applications can register devices');
  });

  it('refuses a body without device.id with a 400 that names the field', async () => {
    const app = await t.make.application();
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/devices', headers: { authorization: app.auth }, payload: { device: {} } });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ statusCode: 400, error: 'Bad Request' });
    expect(res.json().message).toContain('id');
  });
});

describe('DELETE /api/v1/devices/{id} (deregister)', () => {
  it('removes the device from the application only; other applications keep it', async () => {
    const a = await t.make.application();
    const b = await t.make.application();
    const d = await t.make.device(a.principal);
    await t.repos.devices.authorize(d.id, b.id);
    await t.repos.devices.register(b.id, d.id);
    const res = await t.app.inject({ method: 'DELETE', url: `/api/v1/devices/${d.id}`, headers: { authorization: a.auth } });
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');
    expect((await get(a.auth, `/api/v1/devices/${d.id}`)).statusCode).toBe(404);
    expect((await get(b.auth, `/api/v1/devices/${d.id}`)).statusCode).toBe(200);
  });

  it("cannot deregister another application's device (404), and consumers cannot deregister (403)", async () => {
    const a = await t.make.application();
    const b = await t.make.application();
    const consumer = await t.make.application('consumer');
    const d = await t.make.device(a.principal);
    expect((await t.app.inject({ method: 'DELETE', url: `/api/v1/devices/${d.id}`, headers: { authorization: b.auth } })).statusCode).toBe(404);
    expect((await t.app.inject({ method: 'DELETE', url: `/api/v1/devices/${d.id}`, headers: { authorization: consumer.auth } })).statusCode).toBe(403);
    expect((await get(a.auth, `/api/v1/devices/${d.id}`)).statusCode).toBe(200);
  });
});
