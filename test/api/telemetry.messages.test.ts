import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { insertMessage, insertMessages, series } from '../helpers/telemetry.factory.js';
import { partitionsFor } from '../helpers/partitions.js';

const TEL = 'https://telemetry.example.test';
let t: TestApp;
beforeAll(async () => { t = await buildTestApp({ 'url.telemetry': TEL }); });
afterAll(async () => { await t?.close(); });

const notFound = { statusCode: 404, error: 'Not Found', message: 'Not found' };
const selfLink = (id: string, deviceId: string) => `${TEL}/api/v1/messages/${id}?deviceId=${deviceId}`;

async function setup(kind: 'enterprise' | 'consumer' = 'enterprise') {
  const app = await t.make.application(kind);
  const device = await t.make.device(app.principal);
  return { app, device };
}

describe('GET /api/v1/devices/{deviceId}/messages', () => {
  it('lists the messages newest first, each with only its own parameters and a self link on the telemetry base', async () => {
    const { app, device } = await setup();
    const [a, b, c] = await insertMessages(t.db.knex, [
      { deviceId: device.id, ts: '2024-05-01T10:00:00.000Z', data: { rpm: 940, vehicleSpeed: 16 }, location: [-96.790123, 32.782034] },
      { deviceId: device.id, ts: '2024-05-01T10:00:05.000Z', data: { accel: { maxX: 1, maxY: 2, maxZ: 3, minX: -1, minY: -2, minZ: -3 } } },
      { deviceId: device.id, ts: '2024-05-01T10:00:10.123Z', data: { oxygenSensorLocations: ['Bank 1 Sensor 1'] } },
    ]);
    const res = await t.get(`/api/v1/devices/${device.id}/messages?until=2024-05-02T00:00:00.000Z`, app.auth);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      messages: [
        { id: c.id, timestamp: '2024-05-01T10:00:10.123Z', data: { oxygenSensorLocations: ['Bank 1 Sensor 1'] }, links: { self: selfLink(c.id, device.id) } },
        {
          id: b.id, timestamp: '2024-05-01T10:00:05.000Z',
          data: { accel: { maxX: 1, maxY: 2, maxZ: 3, minX: -1, minY: -2, minZ: -3 } }, links: { self: selfLink(b.id, device.id) },
        },
        {
          id: a.id, timestamp: '2024-05-01T10:00:00.000Z',
          data: { rpm: 940, vehicleSpeed: 16, location: { type: 'Point', coordinates: [-96.790123, 32.782034] } },
          links: { self: selfLink(a.id, device.id) },
        },
      ],
      meta: {
        pagination: {
          remaining: 0, limit: 20, until: '2024-05-02T00:00:00.000Z', since: '1970-01-01T00:00:00.000Z', sortDir: 'desc', links: {},
        },
      },
    });
  });

  it('defaults until to the time of the call and answers an empty list for a device without messages', async () => {
    const { app, device } = await setup();
    const before = Date.now();
    const res = await t.get(`/api/v1/devices/${device.id}/messages`, app.auth);
    const body = res.json();
    expect(body.messages).toEqual([]);
    expect(Date.parse(body.meta.pagination.until)).toBeGreaterThanOrEqual(before);
    expect(Date.parse(body.meta.pagination.until)).toBeLessThanOrEqual(Date.now());
    expect(body.meta.pagination.links).toEqual({});
  });

  it('walks the stream without since with remaining exact from the stored total, past the 10,000 cap too', async () => {
    const { app, device } = await setup();
    // 10,025 messages one second apart from 2024-07-01, newest 2024-07-01T02:47:04Z
    await partitionsFor(t.db.knex, 'messages', '2024-07-01T00:00:00Z');
    await t.db.knex.raw(`INSERT INTO messages (id, device_id, ts, received_at)
      SELECT message_uuid(x.ts), ?, x.ts, now()
      FROM (SELECT '2024-07-01T00:00:00Z'::timestamptz + make_interval(secs => i) AS ts FROM generate_series(0, 10024) i) x`, [device.id]);
    const page = async (q: string) => (await t.get(`/api/v1/devices/${device.id}/messages?${q}`, app.auth)).json().meta.pagination;
    expect((await page('limit=20&until=2024-08-01T00:00:00.000Z')).remaining).toBe(10_005);
    // a page further back: the total less the 5,025 newer than its prior link
    expect((await page('limit=10&until=2024-07-01T01:23:19.000Z')).remaining).toBe(4_990);
    // since: counted, capped
    expect((await page('limit=20&until=2024-08-01T00:00:00.000Z&since=2024-06-30T00:00:00.000Z')).remaining).toBe(10_000);
    expect((await page('limit=20&until=2024-08-01T00:00:00.000Z&since=2024-07-01T02:00:00.000Z')).remaining).toBe(2_804);
    // messages that are not the device's (another device's) do not count
    const other = await t.make.device(app.principal);
    await insertMessages(t.db.knex, series(other.id, new Date('2024-07-01T00:00:00.000Z'), 3));
    expect((await page('limit=20&until=2024-08-01T00:00:00.000Z')).remaining).toBe(10_005);
  });

  it('says how many messages the prior links still reach, without since, when pages end inside a shared millisecond', async () => {
    const { app, device } = await setup();
    const start = new Date('2024-06-01T00:00:00.000Z');
    // three messages per millisecond (pages of 5 end inside them, on a before cursor), and four newer than `until`
    const inWindow = await insertMessages(t.db.knex, Array.from({ length: 30 }, (_, i) => ({ deviceId: device.id, ts: new Date(start.getTime() + Math.floor(i / 3) * 1000) })));
    await insertMessages(t.db.knex, series(device.id, new Date('2024-06-03T00:00:00.000Z'), 4));
    let url = `/api/v1/devices/${device.id}/messages?limit=5&until=2024-06-02T00:00:00.000Z`;
    const pages: { n: number; remaining: number }[] = [];
    for (let k = 0; k < 30 && url; k++) {
      const body = (await t.get(url, app.auth)).json();
      pages.push({ n: body.messages.length, remaining: body.meta.pagination.remaining });
      url = body.meta.pagination.links.prior;
    }
    expect(pages.reduce((sum, p) => sum + p.n, 0)).toBe(inWindow.length);
    expect(pages.map((p) => p.n)).toEqual([5, 5, 5, 5, 5, 5]);
    // each page's remaining is what the pages after it hold
    pages.forEach((p, k) => expect(p.remaining, `page ${k}`).toBe(pages.slice(k + 1).reduce((sum, q) => sum + q.n, 0)));
  });

  it('walks the whole stream through prior links, returning every message exactly once and keeping since and limit', async () => {
    const { app, device } = await setup();
    const start = new Date('2024-06-01T00:00:00.000Z');
    const inserted = await insertMessages(t.db.knex, series(device.id, start, 47, (i) => ({ data: { rpm: 1000 + i } })));
    const since = start.getTime() - 1; // exclusive: keeps the first message
    let url = `/api/v1/devices/${device.id}/messages?limit=10&since=${since}&until=2024-06-02T00:00:00.000Z`;
    const seen: string[] = [];
    const remaining: number[] = [];
    const priors: string[] = [];
    for (let pages = 0; pages < 10; pages++) {
      const body = (await t.get(url, app.auth)).json();
      seen.push(...body.messages.map((m: { id: string }) => m.id));
      remaining.push(body.meta.pagination.remaining);
      if (!body.meta.pagination.links.prior) { expect(body.meta.pagination.links).toEqual({}); break; }
      url = body.meta.pagination.links.prior;
      priors.push(url);
    }
    expect(remaining).toEqual([37, 27, 17, 7, 0]);
    expect(seen).toEqual(inserted.map((m) => m.id).reverse());
    expect(new Set(seen).size).toBe(47);
    // The 10th newest message is number 37 (0-based), at start + 37 s; the next page ends 1 ms before it.
    expect(priors[0]).toBe(`${TEL}/api/v1/devices/${device.id}/messages?limit=10&since=${since}&until=${start.getTime() + 37_000 - 1}`);
  });

  it('clamps limit to 100 and refuses a limit that is not a positive integer', async () => {
    const { app, device } = await setup();
    const ok = await t.get(`/api/v1/devices/${device.id}/messages?limit=500`, app.auth);
    expect(ok.json().meta.pagination.limit).toBe(100);
    const bad = await t.get(`/api/v1/devices/${device.id}/messages?limit=ten`, app.auth);
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toEqual({ statusCode: 400, error: 'Bad Request', message: 'limit must be an integer ≥ 1, got "ten"' });
  });

  it('answers 404 "Not found" for a device of another application and for an Enterprise device not registered', async () => {
    const { device } = await setup();
    const other = await t.make.application();
    const res = await t.get(`/api/v1/devices/${device.id}/messages`, other.auth);
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual(notFound);
    const unregistered = await t.make.device(other.principal, { register: false });
    expect((await t.get(`/api/v1/devices/${unregistered.id}/messages`, other.auth)).json()).toEqual(notFound);
  });

  it('serves a device authorized for a Consumer application', async () => {
    const { app, device } = await setup('consumer');
    const m = await insertMessage(t.db.knex, { deviceId: device.id, ts: new Date(Date.now() - 1000), data: { rpm: 800 } });
    const body = (await t.get(`/api/v1/devices/${device.id}/messages`, app.auth)).json();
    expect(body.messages.map((x: { id: string }) => x.id)).toEqual([m.id]);
  });

  it('refuses a device id that is not a UUID with 400 and a missing credential with 401', async () => {
    const { app } = await setup();
    const bad = await t.get('/api/v1/devices/nope/messages', app.auth);
    expect(bad.statusCode).toBe(400);
    expect(bad.json().message).toMatch(/deviceId/);
    const anon = await t.app.inject({ method: 'GET', url: `/api/v1/devices/${crypto.randomUUID()}/messages` });
    expect(anon.statusCode).toBe(401);
  });

  it('logs each call as a transaction of the telemetry service', async () => {
    const { app, device } = await setup();
    await t.get(`/api/v1/devices/${device.id}/messages?limit=5`, app.auth);
    const body = (await t.get('/api/v1/transactions', app.auth)).json();
    expect(body.transactions[0]).toMatchObject({
      path: `/api/v1/devices/${device.id}/messages?limit=5`, statusCode: 200, method: 'GET', service: 'drivewire-telemetry-service',
    });
    expect(body.meta.stats.serviceUsage).toEqual({ 'drivewire-telemetry-service': 1 });
  });
});

describe('since and until', () => {
  let app: Awaited<ReturnType<typeof setup>>['app'];
  let ids: string[];
  let deviceId: string;
  beforeAll(async () => {
    const s = await setup();
    app = s.app; deviceId = s.device.id;
    ids = (await insertMessages(t.db.knex, ['2024-03-01T10:00:00.000Z', '2024-03-02T10:00:00.000Z', '2024-03-03T10:00:00.000Z']
      .map((ts) => ({ deviceId, ts, data: { rpm: 900 } })))).map((m) => m.id);
  });
  const list = async (query: string) => {
    const res = await t.get(`/api/v1/devices/${deviceId}/messages?${query}`, app.auth);
    expect(res.statusCode).toBe(200);
    return res.json().messages.map((m: { id: string }) => m.id);
  };

  it('takes ISO 8601: since is exclusive, until is inclusive', async () => {
    expect(await list('since=2024-03-02T10:00:00.000Z')).toEqual([ids[2]]);
    expect(await list('until=2024-03-02T10:00:00.000Z')).toEqual([ids[1], ids[0]]);
    expect(await list('since=2024-03-01T12:00:00%2B02:00&until=2024-03-02T05:00:00-05:00')).toEqual([ids[1]]);
  });

  it('takes YYYY-MM-DD as UTC midnight', async () => {
    expect(await list('since=2024-03-02')).toEqual([ids[2], ids[1]]);
    expect(await list('until=2024-03-02')).toEqual([ids[0]]);
  });

  it('takes epoch milliseconds', async () => {
    const at = Date.parse('2024-03-02T10:00:00.000Z');
    expect(await list(`since=${at}`)).toEqual([ids[2]]);
    expect(await list(`until=${at}`)).toEqual([ids[1], ids[0]]);
    expect(await list(`since=${at - 1}&until=${at}`)).toEqual([ids[1]]);
  });

  it('treats empty since and until as absent (the SDK sends since=)', async () => {
    expect(await list('since=&until=')).toEqual([ids[2], ids[1], ids[0]]);
  });

  it('refuses a since that is not a date with 400 naming the parameter', async () => {
    const res = await t.get(`/api/v1/devices/${deviceId}/messages?since=yesterday`, app.auth);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      statusCode: 400, error: 'Bad Request',
      message: 'since must be an ISO 8601 timestamp, a date (YYYY-MM-DD) or epoch milliseconds, got "yesterday"',
    });
  });
});

describe('one message', () => {
  it('answers GET /api/v1/messages/{id} with and without the deviceId of its self link', async () => {
    const { app, device } = await setup();
    const m = await insertMessage(t.db.knex, { deviceId: device.id, ts: '2024-05-01T10:00:00.000Z', data: { rpm: 1200 }, location: [2.35, 48.85] });
    const expected = {
      message: {
        id: m.id, timestamp: '2024-05-01T10:00:00.000Z',
        data: { rpm: 1200, location: { type: 'Point', coordinates: [2.35, 48.85] } }, links: { self: selfLink(m.id, device.id) },
      },
    };
    const viaLink = await t.get(selfLink(m.id, device.id), app.auth);
    expect(viaLink.statusCode).toBe(200);
    expect(viaLink.json()).toEqual(expected);
    expect((await t.get(`/api/v1/messages/${m.id}`, app.auth)).json()).toEqual(expected);
    expect((await t.get(`/api/v1/devices/${device.id}/messages/${m.id}`, app.auth)).json()).toEqual(expected);
  });

  it('answers 404 for an unknown message, a message of another device, and a message the application may not read', async () => {
    const { app, device } = await setup();
    const otherDevice = await t.make.device(app.principal);
    const m = await insertMessage(t.db.knex, { deviceId: device.id, ts: new Date(), data: { rpm: 1 } });
    const stranger = await t.make.application();
    for (const [url, auth] of [
      [`/api/v1/messages/${crypto.randomUUID()}`, app.auth],
      [`/api/v1/messages/${m.id}?deviceId=${otherDevice.id}`, app.auth],
      [`/api/v1/devices/${otherDevice.id}/messages/${m.id}`, app.auth],
      [`/api/v1/messages/${m.id}`, stranger.auth],
      [`/api/v1/devices/${device.id}/messages/${m.id}`, stranger.auth],
    ]) {
      const res = await t.get(url, auth);
      expect(res.statusCode, url).toBe(404);
      expect(res.json()).toEqual(notFound);
    }
  });
});
