import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { insertMessages, series } from '../helpers/telemetry.factory.js';

const TEL = 'https://telemetry.example.test';
let t: TestApp;
beforeAll(async () => { t = await buildTestApp({ 'url.telemetry': TEL }); });
afterAll(async () => { await t?.close(); });

const UNTIL = '2024-07-02T00:00:00.000Z';

async function fixture() {
  const app = await t.make.application();
  const device = await t.make.device(app.principal);
  const [a, b, c, d] = await insertMessages(t.db.knex, [
    { deviceId: device.id, ts: '2024-07-01T08:00:00.000Z', data: { rpm: 900, vehicleSpeed: 30, coolantTemp: 80 }, location: [1, 2] },
    { deviceId: device.id, ts: '2024-07-01T08:00:05.000Z', data: { coolantTemp: 81 } },
    { deviceId: device.id, ts: '2024-07-01T08:00:10.000Z', data: { vehicleSpeed: 33 } },
    { deviceId: device.id, ts: '2024-07-01T08:00:15.000Z', data: { rpm: 1100 }, location: [1.1, 2.1] },
  ]);
  return { app, device, a, b, c, d, url: `/api/v1/devices/${device.id}/snapshots?until=${UNTIL}` };
}
const selfLink = (id: string, deviceId: string) => `${TEL}/api/v1/messages/${id}?deviceId=${deviceId}`;

describe('GET /api/v1/devices/{deviceId}/snapshots', () => {
  it('returns only messages holding a requested parameter, each with only the requested parameters it holds', async () => {
    const { app, device, a, c, d, url } = await fixture();
    const res = await t.get(`${url}&fields=rpm,vehicleSpeed`, app.auth);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      snapshots: [
        { id: d.id, timestamp: '2024-07-01T08:00:15.000Z', data: { rpm: 1100 }, links: { self: selfLink(d.id, device.id) } },
        { id: c.id, timestamp: '2024-07-01T08:00:10.000Z', data: { vehicleSpeed: 33 }, links: { self: selfLink(c.id, device.id) } },
        { id: a.id, timestamp: '2024-07-01T08:00:00.000Z', data: { rpm: 900, vehicleSpeed: 30 }, links: { self: selfLink(a.id, device.id) } },
      ],
      meta: { pagination: { remaining: 0, limit: 20, until: UNTIL, since: '1970-01-01T00:00:00.000Z', sortDir: 'desc', links: {} } },
    });
  });

  it('takes location and accel as fields too', async () => {
    const { app, a, d, url } = await fixture();
    const body = (await t.get(`${url}&fields=location`, app.auth)).json();
    expect(body.snapshots.map((s: { id: string; data: unknown }) => [s.id, s.data])).toEqual([
      [d.id, { location: { type: 'Point', coordinates: [1.1, 2.1] } }],
      [a.id, { location: { type: 'Point', coordinates: [1, 2] } }],
    ]);
  });

  it('applies since and until like every stream', async () => {
    const { app, b, url } = await fixture();
    const body = (await t.get(`${url}&fields=coolantTemp&since=2024-07-01T08:00:00.000Z`, app.auth)).json();
    expect(body.snapshots.map((s: { id: string }) => s.id)).toEqual([b.id]);
    expect(body.meta.pagination.since).toBe('2024-07-01T08:00:00.000Z');
  });

  it('requires fields: absent or empty gives 400 naming it', async () => {
    const { app, device } = await fixture();
    const absent = await t.get(`/api/v1/devices/${device.id}/snapshots`, app.auth);
    expect(absent.statusCode).toBe(400);
    expect(absent.json().message).toMatch(/fields/);
    const empty = await t.get(`/api/v1/devices/${device.id}/snapshots?fields=`, app.auth);
    expect(empty.statusCode).toBe(400);
    expect(empty.json()).toEqual({
      statusCode: 400, error: 'Bad Request',
      message: 'fields is required: `all`, or a comma-separated list of parameter keys (e.g. fields=rpm,vehicleSpeed)',
    });
  });

  it('refuses an unknown parameter key with 400 naming it', async () => {
    const { app, url } = await fixture();
    const res = await t.get(`${url}&fields=rpm,bogus`, app.auth);
    expect(res.statusCode).toBe(400);
    expect(res.json().message).toBe('fields: unknown parameter "bogus"');
  });

  it('answers every parameter of each message for fields=all', async () => {
    const { app, device } = await fixture();
    const all = (await t.get(`/api/v1/devices/${device.id}/snapshots?fields=all`, app.auth)).json();
    const messages = (await t.get(`/api/v1/devices/${device.id}/messages`, app.auth)).json();
    expect(all.snapshots.map((x: { id: string }) => x.id)).toEqual(messages.messages.map((x: { id: string }) => x.id));
    expect(all.snapshots.map((x: { data: object }) => x.data)).toEqual(messages.messages.map((x: { data: object }) => x.data));
    expect(all.meta.pagination.links).toEqual({});
  });

  it('pages over matching messages only and prior links keep fields', async () => {
    const app = await t.make.application();
    const device = await t.make.device(app.principal);
    const start = new Date('2024-08-01T00:00:00.000Z');
    // 30 messages: even ones carry rpm, multiples of 3 carry vehicleSpeed; 1, 5, 7, 11, ... carry only coolantTemp.
    const all = await insertMessages(t.db.knex, series(device.id, start, 30, (i) => ({
      data: { coolantTemp: 70, ...(i % 2 === 0 ? { rpm: i } : {}), ...(i % 3 === 0 ? { vehicleSpeed: i } : {}) },
    })));
    const matching = all.filter((_, i) => i % 2 === 0 || i % 3 === 0).map((m) => m.id).reverse();
    expect(matching).toHaveLength(20);
    let url = `/api/v1/devices/${device.id}/snapshots?fields=vehicleSpeed,rpm&limit=7&until=2024-08-02`;
    const seen: string[] = [];
    const remaining: number[] = [];
    for (let pages = 0; pages < 10 && url; pages++) {
      const body = (await t.get(url, app.auth)).json();
      for (const s of body.snapshots) expect(Object.keys(s.data).every((k) => k === 'rpm' || k === 'vehicleSpeed')).toBe(true);
      seen.push(...body.snapshots.map((s: { id: string }) => s.id));
      remaining.push(body.meta.pagination.remaining);
      url = body.meta.pagination.links.prior;
      if (url) expect(new URL(url).searchParams.get('fields')).toBe('vehicleSpeed,rpm');
    }
    expect(remaining).toEqual([13, 6, 0]);
    expect(seen).toEqual(matching);
  });

  it('answers 404 for a device of another application', async () => {
    const { url } = await fixture();
    const other = await t.make.application('consumer');
    const res = await t.get(`${url}&fields=rpm`, other.auth);
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ statusCode: 404, error: 'Not Found', message: 'Not found' });
  });
});
