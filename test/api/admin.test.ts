import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, basic, type TestApp } from '../helpers/app.js';

let t: TestApp;
let admin: string;
beforeAll(async () => { t = await buildTestApp(); admin = `Bearer ${await t.repos.applications.createAdminToken()}`; });
afterAll(async () => { await t?.close(); });

const post = (url: string, payload: unknown, authorization = admin) =>
  t.app.inject({ method: 'POST', url, headers: { authorization }, payload: payload as object });

describe('admin API', () => {
  it('refuses calls without the admin token, and application credentials are not admin credentials', async () => {
    const app = await t.make.application();
    expect((await post('/admin/v1/applications', { application: { name: 'x', kind: 'enterprise' } }, 'Bearer wrong')).statusCode).toBe(401);
    expect((await post('/admin/v1/applications', { application: { name: 'x', kind: 'enterprise' } }, app.auth)).statusCode).toBe(401);
  });

  it('creates an application, provisions a device, authorizes and registers it so the application reads it', async () => {
    const created = (await post('/admin/v1/applications', { application: { name: 'Fleet', kind: 'enterprise' } })).json().application;
    expect(created).toMatchObject({ name: 'Fleet', kind: 'enterprise', secret: expect.any(String) });
    const res = await post('/admin/v1/devices', { device: { name: 'Van 7', chipId: 'VV0123456789' } });
    expect(res.statusCode).toBe(201);
    const device = res.json().device;
    expect(device).toMatchObject({ name: 'Van 7', chipId: 'VV0123456789', caseId: expect.stringMatching(/^VV[A-Z0-9]{5}$/), secret: expect.any(String) });
    expect(await t.repos.devices.authenticate(device.id, device.secret)).toBe(true);
    const auth = basic(created.id, created.secret);
    expect((await post('/api/v1/devices', { device: { id: device.id } }, auth)).statusCode).toBe(404);
    expect((await post(`/admin/v1/devices/${device.id}/authorizations`, { authorization: { applicationId: created.id } })).statusCode).toBe(201);
    expect((await post('/api/v1/devices', { device: { id: device.id } }, auth)).statusCode).toBe(201);
    const list = (await t.app.inject({ method: 'GET', url: '/api/v1/devices', headers: { authorization: auth } })).json();
    expect(list.devices.map((d: any) => d.name)).toEqual(['Van 7']);
  });

  it('revoking an authorization ends the registration too', async () => {
    const app = await t.make.application();
    const d = await t.make.device(app.principal);
    const res = await t.app.inject({ method: 'DELETE', url: `/admin/v1/devices/${d.id}/authorizations/${app.id}`, headers: { authorization: admin } });
    expect(res.statusCode).toBe(204);
    expect((await t.app.inject({ method: 'GET', url: `/api/v1/devices/${d.id}`, headers: { authorization: app.auth } })).statusCode).toBe(404);
    expect(await t.repos.devices.isRegistered(app.id, d.id)).toBe(false);
  });

  it('issues a Bearer token for an application and answers 404 for an unknown one', async () => {
    const app = await t.make.application();
    const res = await post(`/admin/v1/applications/${app.id}/tokens`, { token: { ttlSeconds: 3600 } });
    expect(res.statusCode).toBe(201);
    expect(await t.repos.applications.authenticateToken(res.json().token.accessToken)).toEqual(app.principal);
    expect((await post('/admin/v1/applications/00000000-0000-4000-8000-000000000000/tokens', {})).statusCode).toBe(404);
  });

  it('refuses an unknown application kind with 400', async () => {
    const res = await post('/admin/v1/applications', { application: { name: 'x', kind: 'admin' } });
    expect(res.statusCode).toBe(400);
    expect(res.json().message).toContain('kind');
  });
});
