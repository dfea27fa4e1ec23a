import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';

/**
 * Every route of the OpenAPI document, called with unknown ids, malformed ids, junk query values
 * and junk bodies, answers a 2xx or a 4xx with the error body: never a 500, never a stack trace.
 */
let t: TestApp;
beforeAll(async () => { t = await buildTestApp(); });
afterAll(async () => { await t?.close(); });

const JUNK_QUERY = '?limit=-1&offset=x&since=tomorrow&until=0x10&fields=,,&type=%00&objectId=nope&state=maybe';
const JUNK_BODIES: unknown[] = [{}, [], 'x', 42, { rule: { boundaries: 'x' } }, { subscription: { url: 'ftp://x' } },
  { run: { vin: 1 } }, { dummy: { name: '' } }, { route: { polyline: '@@@' } }, { device: { id: 'x' } }];

function paths(doc: any): { method: string; path: string }[] {
  return Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(([path, ops]) =>
    Object.keys(ops).filter((m) => ['get', 'post', 'put', 'delete'].includes(m)).map((method) => ({ method: method.toUpperCase(), path })));
}

describe('robustness', () => {
  it('answers junk on every route with a 4xx error body, never a 5xx', async () => {
    const app = await t.make.application();
    const device = await t.make.device(app.principal);
    const doc = (await t.app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json();
    const admin = `Bearer ${await t.repos.applications.createAdminToken()}`;
    const routes = paths(doc).filter((r) => /^\/(api|admin)\/v1\//.test(r.path) && r.path !== '/api/v1/messages');
    expect(routes.length).toBeGreaterThanOrEqual(48);
    const failures: string[] = [];
    for (const r of routes) {
      for (const id of ['00000000-0000-4000-8000-000000000000', 'not-a-uuid', device.id]) {
        const url = r.path.replace(/\{[^}]+\}/g, id);
        const bodies = r.method === 'GET' || r.method === 'DELETE' ? [undefined] : JUNK_BODIES;
        for (const body of bodies) {
          for (const q of ['', JUNK_QUERY]) {
            const res = await t.app.inject({
              method: r.method as any, url: url + q, headers: { authorization: r.path.startsWith('/admin') ? admin : app.auth, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
              payload: body === undefined ? undefined : JSON.stringify(body),
            });
            const ok = res.statusCode < 500 && (res.statusCode < 400
              || (res.json().statusCode === res.statusCode && typeof res.json().message === 'string' && !/\bat .*\.(ts|js):\d+/.test(res.body)));
            if (!ok) failures.push(`${r.method} ${url}${q} ${JSON.stringify(body)} → ${res.statusCode} ${res.body.slice(0, 200)}`);
          }
        }
      }
    }
    expect(failures).toEqual([]);
  }, 120_000);
});
