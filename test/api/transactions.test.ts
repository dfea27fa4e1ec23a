import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => { t = await buildTestApp({ servicePrefix: 'acme' }); });
afterAll(async () => { await t?.close(); });

const get = (auth: string, url: string) => t.app.inject({ method: 'GET', url, headers: { authorization: auth } });
const BASE = 'http://localhost:3999';

/** Inserts transactions at known times so paging is exact (calls within one ms share a timestamp). */
async function seed(appId: string, n: number, start = Date.parse('2026-05-01T00:00:00Z')) {
  for (let i = 0; i < n; i++) {
    await t.repos.transactions.record({ applicationId: appId, timestamp: new Date(start + i * 1000), path: `/api/v1/devices?i=${i}`, statusCode: 200, method: 'GET', service: 'acme-platform-service' });
  }
}

describe('GET /api/v1/transactions', () => {
  it('records each call with path, status, method and the <prefix>-<kind>-service name, including 4xx', async () => {
    const app = await t.make.application();
    await get(app.auth, '/api/v1/devices?limit=1');
    await get(app.auth, '/api/v1/devices/00000000-0000-4000-8000-000000000000');
    const body = (await get(app.auth, '/api/v1/transactions')).json();
    expect(body.transactions.map((x: any) => [x.method, x.path, x.statusCode, x.service])).toEqual([
      ['GET', '/api/v1/devices/00000000-0000-4000-8000-000000000000', 404, 'acme-platform-service'],
      ['GET', '/api/v1/devices?limit=1', 200, 'acme-platform-service'],
    ]);
    expect(Object.keys(body.transactions[0]).sort()).toEqual(['id', 'method', 'path', 'service', 'statusCode', 'timestamp']);
    // The listing itself is recorded too, once it has answered.
    const again = (await get(app.auth, '/api/v1/transactions')).json();
    expect(again.transactions[0].path).toBe('/api/v1/transactions');
    expect(again.meta.stats).toEqual({ periodTotal: 3, allTimeTotal: 3, serviceUsage: { 'acme-platform-service': 3 } });
  });

  it("does not show one application's calls to another", async () => {
    const a = await t.make.application();
    const b = await t.make.application();
    await get(a.auth, '/api/v1/devices');
    const body = (await get(b.auth, '/api/v1/transactions')).json();
    expect(body.transactions).toEqual([]);
    expect(body.meta.stats.allTimeTotal).toBe(0);
  });

  it('walks stream pagination to the end through prior links, newest first, each item once', async () => {
    const app = await t.make.application();
    await seed(app.id, 9);
    const until = '2026-05-01T00:01:00.000Z';
    let url: string | undefined = `/api/v1/transactions?limit=4&until=${until}`;
    const paths: string[] = [];
    const metas: any[] = [];
    while (url) {
      const body: any = (await get(app.auth, url.replace(BASE, ''))).json();
      paths.push(...body.transactions.map((x: any) => x.path));
      metas.push(body.meta.pagination);
      url = body.meta.pagination.links.prior;
    }
    expect(paths).toEqual([8, 7, 6, 5, 4, 3, 2, 1, 0].map((i) => `/api/v1/devices?i=${i}`));
    expect(metas.map((m) => m.remaining)).toEqual([5, 1, 0]);
    expect(metas[0]).toEqual({
      remaining: 5, limit: 4, until, since: '1970-01-01T00:00:00.000Z', sortDir: 'desc',
      links: { prior: `${BASE}/api/v1/transactions?limit=4&until=${Date.parse('2026-05-01T00:00:05Z') - 1}` },
    });
    expect(metas[2].links).toEqual({});
  });

  it('accepts since/until as ISO 8601, YYYY-MM-DD and epoch ms; since exclusive, until inclusive', async () => {
    const app = await t.make.application();
    await seed(app.id, 5, Date.parse('2026-05-02T00:00:00Z')); // 00:00:00 .. 00:00:04
    const count = async (q: string) => (await get(app.auth, `/api/v1/transactions?${q}`)).json().transactions
      .filter((x: any) => x.path.startsWith('/api/v1/devices?i=')).length;
    expect(await count('since=2026-05-02T00:00:01Z&until=2026-05-02T00:00:03.000Z')).toBe(2);
    expect(await count(`since=${Date.parse('2026-05-02T00:00:01Z')}&until=${Date.parse('2026-05-02T00:00:03Z')}`)).toBe(2);
    expect(await count('since=2026-05-02T02:00:01%2B02:00&until=2026-05-02T00:00:03Z')).toBe(2);
    expect(await count('since=2026-05-02T00:00:03Z&until=2026-05-02T00:00:03Z')).toBe(0);
    expect(await count('since=2026-05-01&until=2026-05-03')).toBe(5);
    expect(await count('since=&until=2026-05-03')).toBe(5);
    const bad = await get(app.auth, '/api/v1/transactions?since=yesterday');
    expect(bad.statusCode).toBe(400);
    expect(bad.json().message).toBe('since must be an ISO 8601 timestamp, a date (YYYY-MM-DD) or epoch milliseconds, got "yesterday"');
    const stats = (await get(app.auth, '/api/v1/transactions?since=2026-05-02T00:00:01Z&until=2026-05-02T00:00:03Z')).json().meta.stats;
    expect(stats.periodTotal).toBe(2);
  });
});

describe('stream pagination with records sharing a millisecond', () => {
  it('ends a page at limit even inside a millisecond, and walking prior links returns every record once', async () => {
    const app = await t.make.application();
    const at = (s: number) => Date.parse('2026-06-01T00:00:00Z') + s * 1000;
    const stamps = [at(1), at(2), at(2), at(2), at(3), at(4), at(4), at(4), at(4), at(4), at(5)];
    for (const [i, ts] of stamps.entries()) {
      await t.repos.transactions.record({ applicationId: app.id, timestamp: new Date(ts), path: `/p/${i}`, statusCode: 200, method: 'GET', service: 'acme-platform-service' });
    }
    let url: string | undefined = `/api/v1/transactions?limit=3&until=${at(10)}`;
    const pages: { paths: string[]; remaining: number; prior?: string }[] = [];
    while (url) {
      const body: any = (await get(app.auth, url.replace(BASE, ''))).json();
      pages.push({ paths: body.transactions.map((x: any) => x.path), remaining: body.meta.pagination.remaining, prior: body.meta.pagination.links.prior });
      url = body.meta.pagination.links.prior;
    }
    // 5 4 4 | 4 4 4 | 3 2 2 | 2 1
    expect(pages.map((p) => p.paths.length)).toEqual([3, 3, 3, 2]);
    expect(pages.map((p) => p.remaining)).toEqual([8, 5, 2, 0]);
    expect(pages.flat().flatMap((p) => p.paths).sort()).toEqual(stamps.map((_, i) => `/p/${i}`).sort());
    // inside a millisecond the link's until carries the last one's id; before an earlier one it is the spec's until − 1 ms
    const cursorOf = (ms: number) => new RegExp(`until=${encodeURIComponent(new Date(ms).toISOString().slice(0, -1))}\\d{39}Z$`);
    expect(pages[0].prior).toMatch(cursorOf(at(4)));
    expect(pages[1].prior).toBe(`${BASE}/api/v1/transactions?limit=3&until=${at(4) - 1}`);
    expect(pages[2].prior).toMatch(cursorOf(at(2)));
    expect(pages[3].prior).toBeUndefined();
  });
});

describe('the buffered transaction log', () => {
  it("keeps the other applications' lines when one application is deleted before the batch is written", async () => {
    const kept = await t.make.application();
    const gone = await t.make.application();
    await seed(kept.id, 2);
    await seed(gone.id, 2);
    await t.db.knex('applications').where('id', gone.id).del();
    const lines = (await get(kept.auth, '/api/v1/transactions?until=1777593610000')).json().transactions;
    expect(lines.map((x: any) => x.path)).toEqual(['/api/v1/devices?i=1', '/api/v1/devices?i=0']);
    expect(await t.db.knex('transactions').where('application_id', gone.id).count({ n: '*' })).toEqual([{ n: 0 }]);
  });
});
