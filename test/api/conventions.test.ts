import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, basic, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => { t = await buildTestApp({ 'url.telemetry': 'https://telemetry.example.test', 'url.rule': 'https://rules.example.test' }); });
afterAll(async () => { await t?.close(); });

describe('authentication', () => {
  it('answers 401 with the error body without credentials, with a wrong secret and with an unknown token', async () => {
    const app = await t.make.application();
    for (const authorization of [undefined, basic(app.id, 'wrong'), basic('not-a-uuid', 'x'), 'Bearer nope', 'Basic ???']) {
      const res = await t.app.inject({ method: 'GET', url: '/api/v1/devices', headers: authorization ? { authorization } : {} });
      expect(res.statusCode).toBe(401);
      expect(res.json()).toEqual({ statusCode: 401, error: 'Unauthorized', message: 'Missing or invalid credentials' });
    }
  });

  it('accepts a Bearer token issued for the application, and refuses it once expired', async () => {
    const app = await t.make.application();
    const d = await t.make.device(app.principal);
    const { accessToken, expiresAt } = await t.repos.applications.createToken(app.id, 1);
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/devices', headers: { authorization: `Bearer ${accessToken}` } });
    expect(res.json().devices.map((x: any) => x.id)).toEqual([d.id]);
    // Expiry holds although the authentication is cached (the cache keeps the expiry with the principal).
    await new Promise((r) => setTimeout(r, expiresAt!.getTime() - Date.now() + 50));
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/devices', headers: { authorization: `Bearer ${accessToken}` } })).statusCode).toBe(401);
  });
});

describe('error bodies', () => {
  it('answers an unknown route with 404 and the error body', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/nothing-here' });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ statusCode: 404, error: 'Not Found', message: 'Route GET /api/v1/nothing-here not found' });
  });

  it('answers malformed JSON with 400', async () => {
    const app = await t.make.application();
    const res = await t.app.inject({
      method: 'POST', url: '/api/v1/devices', headers: { authorization: app.auth, 'content-type': 'application/json' }, payload: '{"device": {',
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ statusCode: 400, error: 'Bad Request' });
    expect(res.json().message).toMatch(/JSON/i);
    expect(res.body).not.toMatch(/at .*\.js/);
  });

  it('answers a body that is not JSON with 415', async () => {
    const app = await t.make.application();
    const res = await t.app.inject({
      method: 'POST', url: '/api/v1/devices', headers: { authorization: app.auth, 'content-type': 'text/plain' }, payload: 'device=1',
    });
    expect(res.statusCode).toBe(415);
    expect(res.json()).toEqual({ statusCode: 415, error: 'Unsupported Media Type', message: 'Unsupported Media Type: send the body as application/json' });
  });

  it('refuses a stream window whose since is after its until, on every kind of stream list; since = until is empty', async () => {
    const app = await t.make.application();
    const d = await t.make.device(app.principal);
    const at = (q: string, path: string) => t.app.inject({ method: 'GET', url: `${path}?${q}`, headers: { authorization: app.auth } });
    for (const path of [`/api/v1/devices/${d.id}/messages`, `/api/v1/devices/${d.id}/events`, `/api/v1/devices/${d.id}/trips`, '/api/v1/transactions']) {
      const res = await at('since=2000&until=1000', path);
      expect(res.statusCode, path).toBe(400);
      expect(res.json()).toEqual({ statusCode: 400, error: 'Bad Request',
        message: `since (${new Date(2000).toISOString()}) must not be after until (${new Date(1000).toISOString()})` });
      const empty = await at('since=1000&until=1000', path);
      expect(empty.statusCode, path).toBe(200);
      expect(empty.json().meta.pagination).toMatchObject({ remaining: 0, since: new Date(1000).toISOString(), until: new Date(1000).toISOString() });
    }
  });

  it('answers a malformed id with 400 naming the parameter', async () => {
    const app = await t.make.application();
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/devices/not-a-uuid', headers: { authorization: app.auth } });
    expect(res.statusCode).toBe(400);
    expect(res.json().message).toContain('deviceId');
  });
});

describe('links', () => {
  it('builds each link on its sub-service base URL when one is configured', async () => {
    const app = await t.make.application();
    const d = await t.make.device(app.principal);
    const links = (await t.app.inject({ method: 'GET', url: `/api/v1/devices/${d.id}`, headers: { authorization: app.auth } })).json().device.links;
    expect(links.self).toBe(`http://localhost:3999/api/v1/devices/${d.id}`);
    expect(links.rules).toBe(`https://rules.example.test/api/v1/devices/${d.id}/rules`);
    expect(links.events).toBe(`http://localhost:3999/api/v1/devices/${d.id}/events`);
  });
});

describe('OpenAPI', () => {
  it('serves the OpenAPI document with every platform route and the docs page', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json();
    expect(doc.openapi).toMatch(/^3\./);
    for (const p of ['/api/v1/devices', '/api/v1/devices/{deviceId}', '/api/v1/devices/{deviceId}/vehicles',
      '/api/v1/devices/{deviceId}/vehicles/_latest', '/api/v1/vehicles/{vehicleId}', '/api/v1/transactions']) {
      expect(doc.paths[p], p).toBeDefined();
    }
    expect(doc.paths['/api/v1/devices'].get.responses['200']).toBeDefined();
    const page = await t.app.inject({ method: 'GET', url: '/docs/' });
    expect([200, 302]).toContain(page.statusCode);
  });
});
