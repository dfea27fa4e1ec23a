import { describe, expect, it } from 'vitest';
import { basic } from '../helpers/app.js';
import { BOUNDARY, LINE, liveApi, refused } from './api-helpers.js';

/**
 * Input the database cannot take, against the real server over HTTP: NUL bytes anywhere in the input,
 * 36-character ids that are not UUIDs, numbers past what the database takes. Each is a 400 naming the field;
 * any 5xx fails the test that got it.
 */
const { t, http, setup } = liveApi();

describe('NUL bytes', () => {
  it('refuses a NUL in a query parameter with 400 naming it', async () => {
    const { app, device } = await setup();
    refused(await http('GET', `/api/v1/devices/${device.id}/events?type=start%00up`, { auth: app.auth }), 'type');
    refused(await http('GET', `/api/v1/devices/${device.id}/subscriptions?objectType=ru%00le`, { auth: app.auth }), 'objectType');
    refused(await http('GET', `/api/v1/devices/${device.id}/locations?fields=rpm%00`, { auth: app.auth }), 'fields');
  });

  it('refuses a NUL in any stored string of a JSON body (values and keys, at any depth) with 400 naming the field', async () => {
    const { app, device } = await setup();
    refused(await http('POST', `/api/v1/devices/${device.id}/rules`, { auth: app.auth, body: { rule: { name: 'fast\u0000', boundaries: [BOUNDARY] } } }), 'rule.name');
    refused(await http('POST', '/api/v1/routes', { auth: app.auth, body: { route: { name: 'a\u0000b', geojson: LINE } } }), 'route.name');
    refused(await http('POST', '/api/v1/routes', { auth: app.auth, body: { route: { name: 'k', geojson: { ...LINE, properties: { 'x\u0000': 1 } } } } }), 'route.geojson.properties');
    refused(await http('POST', `/api/v1/devices/${device.id}/subscriptions`, {
      auth: app.auth, body: { subscription: { eventType: 'startup', url: 'http://127.0.0.1:9/h', appData: '{"k":"\u0000"}' } },
    }), 'subscription.appData');
    // Escaped in a route file's text, it reaches the stored name only once the file is parsed.
    const file = `{"type":"Feature","properties":{"name":"a\\u0000b"},"geometry":${JSON.stringify(LINE)}}`;
    refused(await http('POST', '/api/v1/routes', { auth: app.auth, body: { route: { file, fileName: 'nul.geojson' } } }), "nul.geojson: the file's name");
    expect(await t().db.knex('rules').where('device_id', device.id).count({ n: '*' })).toEqual([{ n: 0 }]);
  });

  it('refuses a NUL in the credentials of the Authorization header with 400 naming it', async () => {
    const { app } = await setup();
    refused(await http('GET', '/api/v1/devices', { auth: basic(app.id, `${app.secret}\u0000`) }), 'authorization');
    refused(await http('GET', '/api/v1/devices', { auth: basic(`${app.id.slice(0, 35)}\u0000`, app.secret) }), 'authorization');
  });
});

describe('ids of 36 characters that are not UUIDs', () => {
  const BAD = ['zzzzzzzz-zzzz-zzzz-zzzz-zzzzzzzzzzzz', '------------------------------------', 'urn:uuid:00000000-0000-4000-8000-000000000000'];

  it('refuses them on every path id of the OpenAPI document with 400 naming the parameter, before the database', async () => {
    const app = await t().make.application();
    const admin = `Bearer ${await t().repos.applications.createAdminToken()}`;
    const doc = (await http('GET', '/api/v1/openapi.json')).json;
    const failures: string[] = [];
    for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, unknown>>)) {
      const params = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
      if (!params.length) continue;
      for (const method of Object.keys(ops).filter((m) => ['get', 'post', 'put', 'delete'].includes(m))) {
        for (const bad of BAD) {
          const url = path.replace(/\{[^}]+\}/g, encodeURIComponent(bad));
          const res = await http(method.toUpperCase(), url, { auth: path.startsWith('/admin') ? admin : app.auth, body: method === 'post' || method === 'put' ? {} : undefined });
          if (res.status !== 400 || !params.some((p) => res.json?.message?.includes(p))) failures.push(`${method} ${url} → ${res.status} ${res.json?.message}`);
        }
      }
    }
    expect(failures).toEqual([]);
  });

  it('refuses them as query and body ids and as the Basic user name', async () => {
    const { app, device } = await setup();
    for (const bad of BAD) {
      refused(await http('GET', `/api/v1/messages/00000000-0000-4000-8000-000000000000?deviceId=${encodeURIComponent(bad)}`, { auth: app.auth }), 'deviceId');
      refused(await http('GET', `/api/v1/devices/${device.id}/events?objectId=${encodeURIComponent(bad)}`, { auth: app.auth }), 'objectId');
      refused(await http('POST', '/api/v1/devices', { auth: app.auth, body: { device: { id: bad } } }), 'id');
      const res = await http('GET', '/api/v1/devices', { auth: basic(bad, app.secret) });
      expect(res.status).toBe(401);
    }
  });
});

describe('numbers past what the database takes', () => {
  it('refuses an offset beyond 2^53 (past a PostgreSQL bigint OFFSET: a 400, not a 500) and still clamps a huge limit', async () => {
    const { app, device } = await setup();
    for (const path of ['/api/v1/devices', `/api/v1/devices/${device.id}/rules`, '/api/v1/routes', '/api/v1/dummies']) {
      refused(await http('GET', `${path}?offset=99999999999999999999`, { auth: app.auth }), 'offset');
    }
    const clamped = await http('GET', '/api/v1/devices?limit=99999999999999999999', { auth: app.auth });
    expect(clamped.status).toBe(200);
    expect(clamped.json.meta.pagination.limit).toBe(100);
  });

  it('refuses a token lifetime whose expiry is no date (ttlSeconds 1e308): a 400, not a 500', async () => {
    const app = await t().make.application();
    const admin = `Bearer ${await t().repos.applications.createAdminToken()}`;
    for (const ttl of ['1e308', '9007199254740993']) {
      refused(await http('POST', `/admin/v1/applications/${app.id}/tokens`, { auth: admin, raw: `{"token":{"ttlSeconds":${ttl}}}` }), 'ttlSeconds');
    }
    expect((await http('POST', `/admin/v1/applications/${app.id}/tokens`, { auth: admin, body: { token: { ttlSeconds: 315_360_000 } } })).status).toBe(201);
  });
});
