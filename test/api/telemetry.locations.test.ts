import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { insertMessages, series } from '../helpers/telemetry.factory.js';

const TEL = 'https://telemetry.example.test';
let t: TestApp;
beforeAll(async () => { t = await buildTestApp({ 'url.telemetry': TEL }); });
afterAll(async () => { await t?.close(); });

const UNTIL = '2024-07-02T00:00:00.000Z';
const accel = { maxX: 0.5, maxY: 0.1, maxZ: 9.9, minX: -0.5, minY: -0.1, minZ: 9.7 };

/** Three messages: two with a location (the newest has rpm only), one without. */
async function fixture() {
  const app = await t.make.application();
  const device = await t.make.device(app.principal);
  const [a, , c] = await insertMessages(t.db.knex, [
    { deviceId: device.id, ts: '2024-07-01T08:00:00.000Z', data: { rpm: 900, vehicleSpeed: 30, accel }, location: [-90.0811, 29.9508] },
    { deviceId: device.id, ts: '2024-07-01T08:00:05.000Z', data: { rpm: 950, vehicleSpeed: 31 } },
    { deviceId: device.id, ts: '2024-07-01T08:00:10.000Z', data: { rpm: 1000, fuelType: 'Gasoline' }, location: [-90.0815, 29.9511] },
  ]);
  return { app, device, a, c, url: `/api/v1/devices/${device.id}/locations?until=${UNTIL}` };
}
const feature = (coordinates: number[], properties: Record<string, unknown>) =>
  ({ type: 'Feature', geometry: { type: 'Point', coordinates }, properties });
const meta = { pagination: { remaining: 0, limit: 20, until: UNTIL, since: '1970-01-01T00:00:00.000Z', sortDir: 'desc', links: {} } };

describe('GET /api/v1/devices/{deviceId}/locations', () => {
  it('answers a GeoJSON FeatureCollection of the located messages only, with timestamp and id when no fields are asked', async () => {
    const { app, a, c, url } = await fixture();
    const res = await t.get(url, app.auth);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      locations: {
        type: 'FeatureCollection',
        features: [
          feature([-90.0815, 29.9511], { timestamp: '2024-07-01T08:00:10.000Z', id: c.id }),
          feature([-90.0811, 29.9508], { timestamp: '2024-07-01T08:00:00.000Z', id: a.id }),
        ],
      },
      meta,
    });
    expect((await t.get(`${url}&fields=`, app.auth)).json()).toEqual(res.json());
  });

  it('copies the requested parameters present at each location both flat and under properties.data', async () => {
    const { app, a, c, url } = await fixture();
    const body = (await t.get(`${url}&fields=vehicleSpeed,rpm`, app.auth)).json();
    expect(body.locations.features).toEqual([
      feature([-90.0815, 29.9511], { timestamp: '2024-07-01T08:00:10.000Z', id: c.id, rpm: 1000, data: { rpm: 1000 } }),
      feature([-90.0811, 29.9508], {
        timestamp: '2024-07-01T08:00:00.000Z', id: a.id, rpm: 900, vehicleSpeed: 30, data: { rpm: 900, vehicleSpeed: 30 },
      }),
    ]);
  });

  it('with fields=all gives every parameter of the message (the location itself is the geometry)', async () => {
    const { app, a, c, url } = await fixture();
    const body = (await t.get(`${url}&fields=all`, app.auth)).json();
    expect(body.locations.features).toEqual([
      feature([-90.0815, 29.9511], {
        timestamp: '2024-07-01T08:00:10.000Z', id: c.id, rpm: 1000, fuelType: 'Gasoline', data: { rpm: 1000, fuelType: 'Gasoline' },
      }),
      feature([-90.0811, 29.9508], {
        timestamp: '2024-07-01T08:00:00.000Z', id: a.id, rpm: 900, vehicleSpeed: 30, accel,
        data: { rpm: 900, vehicleSpeed: 30, accel },
      }),
    ]);
  });

  it('refuses an unknown parameter key with 400 naming it', async () => {
    const { app, url } = await fixture();
    const one = await t.get(`${url}&fields=rpm,bogus`, app.auth);
    expect(one.statusCode).toBe(400);
    expect(one.json()).toEqual({ statusCode: 400, error: 'Bad Request', message: 'fields: unknown parameter "bogus"' });
    const two = await t.get(`${url}&fields=speed,RPM`, app.auth);
    expect(two.json().message).toBe('fields: unknown parameters "speed", "RPM"');
  });

  it('pages over located messages only, and prior links keep fields', async () => {
    const app = await t.make.application();
    const device = await t.make.device(app.principal);
    const start = new Date('2024-08-01T00:00:00.000Z');
    // 25 messages; every 5th has no location, so 20 are located.
    const all = await insertMessages(t.db.knex, series(device.id, start, 25, (i) => ({
      data: { rpm: 1000 + i }, location: i % 5 === 4 ? undefined : [10 + i / 1000, 50] as [number, number],
    })));
    const located = all.filter((_, i) => i % 5 !== 4).map((m) => m.id).reverse();
    let url = `/api/v1/devices/${device.id}/locations?limit=8&fields=rpm&until=2024-08-02T00:00:00.000Z`;
    const seen: string[] = [];
    const remaining: number[] = [];
    for (let pages = 0; pages < 10 && url; pages++) {
      const body = (await t.get(url, app.auth)).json();
      seen.push(...body.locations.features.map((f: { properties: { id: string } }) => f.properties.id));
      for (const f of body.locations.features) expect(f.properties.data).toEqual({ rpm: f.properties.rpm });
      remaining.push(body.meta.pagination.remaining);
      url = body.meta.pagination.links.prior;
      if (url) expect(url).toMatch(new RegExp(`^${TEL}/api/v1/devices/${device.id}/locations\\?fields=rpm&limit=8&until=\\d+$`));
    }
    expect(remaining).toEqual([12, 4, 0]);
    expect(seen).toEqual(located);
  });

  it('answers 404 for a device of another application', async () => {
    const { url } = await fixture();
    const other = await t.make.application();
    const res = await t.get(url, other.auth);
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ statusCode: 404, error: 'Not Found', message: 'Not found' });
  });
});
