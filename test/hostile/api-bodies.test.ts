import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { runCli } from '../helpers/cli.js';
import { BOUNDARY, LINE, liveApi, nested, refused } from './api-helpers.js';

/**
 * Request bodies and answers against the real server over HTTP: deep and oversized JSON, empty bodies with a
 * JSON content type, 204 answers sent once, `apps token default`, links.groups on registration. Any 5xx fails
 * the test that got it.
 */
const { t, base, http, setup } = liveApi();

describe('depth and size of JSON bodies', () => {
  it('refuses a 5,000-level GeoJSON on POST /api/v1/routes, and deep bodies on any route, with 400', async () => {
    const { app, device } = await setup();
    const geojson = `{"type":"LineString","coordinates":${nested(5000)}}`;
    refused(await http('POST', '/api/v1/routes', { auth: app.auth, raw: `{"route":{"name":"deep","geojson":${geojson}}}` }), 'deep');
    refused(await http('POST', `/api/v1/devices/${device.id}/rules`, { auth: app.auth, raw: `{"rule":${nested(50_000)}}` }), 'deep');
    refused(await http('POST', `/api/v1/devices/${device.id}/subscriptions`, {
      auth: app.auth, raw: `{"subscription":{"eventType":"startup","url":"http://127.0.0.1:9/h","object":${nested(40)}}}`,
    }), 'deep');
    // The same document as the text of a route file.
    const file = `{"type":"Feature","geometry":${geojson}}`;
    refused(await http('POST', '/api/v1/routes', { auth: app.auth, body: { route: { name: 'deep file', file } } }), 'deep');
    expect((await http('POST', '/api/v1/routes', { auth: app.auth, body: { route: { name: 'fine', geojson: LINE } } })).status).toBe(201);
  });

  it('answers a body over the size limit with 413 and the error body', async () => {
    const { app } = await setup();
    const big = { route: { name: 'big', polyline: 'a'.repeat(2 * 1024 * 1024) } };
    const res = await http('POST', '/api/v1/routes', { auth: app.auth, body: big });
    expect(res.status).toBe(413);
    expect(res.json).toMatchObject({ statusCode: 413, error: 'Payload Too Large', message: expect.stringContaining('limit') });
  });

  it('answers a deeply nested live-stream frame with an error frame and keeps the connection', async () => {
    const { app, device } = await setup();
    const ws = new WebSocket(`${base().replace('http', 'ws')}/api/v1/messages`, { headers: { authorization: app.auth } });
    const frames: any[] = [];
    ws.on('message', (raw) => frames.push(JSON.parse(raw.toString())));
    await new Promise((resolve, reject) => { ws.once('open', resolve); ws.once('error', reject); });
    ws.send(`{"type":"sub","subject":{"type":${nested(20_000)},"id":"${device.id}"}}`);
    ws.send(JSON.stringify({ type: 'sub', subject: { type: 'device', id: device.id } }));
    await expect.poll(() => frames.filter((f) => f.type !== 'health').length, { timeout: 5000 }).toBeGreaterThanOrEqual(2);
    expect(ws.readyState).toBe(WebSocket.OPEN);
    expect(frames.find((f) => f.type === 'error')?.payload?.message ?? JSON.stringify(frames)).toMatch(/deep/);
    ws.close();
  });
});

describe('body-less requests with Content-Type: application/json', () => {
  it('accepts an empty body on DELETE and GET', async () => {
    const { app, device } = await setup();
    const rule = await http('POST', `/api/v1/devices/${device.id}/rules`, { auth: app.auth, body: { rule: { name: 'r', boundaries: [BOUNDARY] } } });
    expect(rule.status).toBe(201);
    const json = { 'content-type': 'application/json' };
    expect((await http('GET', `/api/v1/rules/${rule.json.rule.id}`, { auth: app.auth, headers: json })).status).toBe(200);
    expect((await http('DELETE', `/api/v1/rules/${rule.json.rule.id}`, { auth: app.auth, headers: json })).status).toBe(204);
    expect((await http('DELETE', `/api/v1/rules/${rule.json.rule.id}`, { auth: app.auth, headers: json })).status).toBe(404);
    // A body-carrying request still needs its body.
    refused(await http('POST', `/api/v1/devices/${device.id}/rules`, { auth: app.auth, headers: json }), 'empty');
  });
});

describe('204 answers', () => {
  it('sends a 204 once: one transaction recorded per DELETE, on every 204 route', async () => {
    const { app, device } = await setup();
    const rule = (await http('POST', `/api/v1/devices/${device.id}/rules`, { auth: app.auth, body: { rule: { name: 'r', boundaries: [BOUNDARY] } } })).json.rule;
    const sub = (await http('POST', `/api/v1/devices/${device.id}/subscriptions`, { auth: app.auth, body: { subscription: { eventType: 'startup', url: 'http://127.0.0.1:9/h' } } })).json.subscription;
    const dummy = (await http('POST', '/api/v1/dummies', { auth: app.auth, body: { dummy: { name: 'd' } } })).json.dummy;
    const deletes = [`/api/v1/rules/${rule.id}`, `/api/v1/subscriptions/${sub.id}`, `/api/v1/devices/${device.id}`,
      `/api/v1/dummies/${dummy.id}/runs/_current`, `/api/v1/dummies/${dummy.id}`];
    for (const path of deletes) expect((await http('DELETE', path, { auth: app.auth })).status).toBe(204);
    await new Promise((r) => setTimeout(r, 300)); // a second send would record its transaction after the answer
    await t().repos.transactions.flush(); // the log is written in batches (transactions.repository.ts)
    const rows = await t().db.knex('transactions').where({ application_id: app.id, method: 'DELETE' }).select('path');
    expect(rows.map((r) => r.path).sort()).toEqual([...deletes].sort());
    // The admin API's 204 (no transaction log there): the answer is complete and the next call is served.
    const owner = await t().make.application();
    const other = await t().make.device(owner.principal);
    const admin = `Bearer ${await t().repos.applications.createAdminToken()}`;
    expect((await http('DELETE', `/admin/v1/devices/${other.id}/authorizations/${owner.id}`, { auth: admin })).status).toBe(204);
    expect((await http('DELETE', `/admin/v1/devices/${other.id}/authorizations/${owner.id}`, { auth: admin })).status).toBe(404);
  });

  it('has no handler that sends and then returns nothing (the cause of the double send)', () => {
    const files = fs.readdirSync('api', { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
    const offenders = files.flatMap((f) => fs.readFileSync(path.join('api', f), 'utf8').split('\n')
      .map((line, i) => ({ line, at: `${f}:${i + 1}` }))
      .filter(({ line }) => /^\s*reply\b.*\.send\(/.test(line)));
    // A send in a route handler must be returned (`return reply.code(204).send()`); the error and
    // not-found handlers of api/plugins/errors.ts are not route handlers.
    expect(offenders.map((o) => o.at).filter((at) => !at.startsWith(`plugins${path.sep}errors.ts`))).toEqual([]);
  });
});

describe('apps token default, links.groups', () => {
  it('issues a token for the default application through the admin API and the CLI', async () => {
    const def = (await t().repos.applications.findDefault())
      ?? await t().repos.applications.create({ name: 'Default application', kind: 'enterprise', isDefault: true });
    const adminToken = await t().repos.applications.createAdminToken();
    const res = await http('POST', '/admin/v1/applications/default/tokens', { auth: `Bearer ${adminToken}`, body: {} });
    expect(res.status).toBe(201);
    const devices = await http('GET', '/api/v1/devices', { auth: `Bearer ${res.json.token.accessToken}` });
    expect(devices.status).toBe(200);
    const cli = await runCli(['apps', 'token', 'default', '--api-url', base(), '--json'], { DRIVEWIRE_ADMIN_TOKEN: adminToken }, 60_000);
    expect(cli.stderr).toBe('');
    expect(cli.code).toBe(0);
    const token = JSON.parse(cli.stdout).accessToken;
    expect(await t().repos.applications.authenticateToken(token)).toMatchObject({ id: def.id });
  }, 90_000);

  it('POST /api/v1/devices answers with links.groups like the other device responses', async () => {
    const app = await t().make.application();
    const device = await t().make.device(app.principal, { register: false });
    const res = await http('POST', '/api/v1/devices', { auth: app.auth, body: { device: { id: device.id } } });
    expect(res.status).toBe(201);
    expect(res.json.device.links).toEqual({
      self: `http://localhost:3999/api/v1/devices/${device.id}`,
      groups: `http://localhost:3999/api/v1/devices/${device.id}/groups`,
      vehicles: `http://localhost:3999/api/v1/devices/${device.id}/vehicles`,
      latestVehicle: `http://localhost:3999/api/v1/devices/${device.id}/vehicles/_latest`,
    });
  });
});
