import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { vehicleWithDevice } from '../db/distance.fixtures.js';
import { liveApi, refused } from './api-helpers.js';

/**
 * Values at the edges of what JSON and JavaScript take but the platform cannot keep, against the real server over
 * HTTP: dates at the ends of JavaScript's range (which PostgreSQL refuses: 400s, not 500s) or not on the calendar
 * (2026-02-30 must not be read as March 2nd), and numbers up to 1e308 in bodies (an odometer of 1e308 mi would be
 * stored, then listed as null).
 * Any 5xx fails the test that got it.
 */
const { t, http, setup } = liveApi();

const EDGES = [
  ['since', '-8640000000000000', 'is outside 1970-01-01T00:00:00.000Z..9999-12-31T23:59:59.999Z'],
  ['until', '8640000000000000', 'is outside 1970-01-01T00:00:00.000Z..9999-12-31T23:59:59.999Z'],
  ['since', '-1', 'is outside'],
  ['until', '275760-09-13T00:00:00.000Z', 'must be an ISO 8601 timestamp'],
  ['since', '2026-02-30', 'is not a valid date'],
  ['until', '2026-02-29T12:00:00Z', 'is not a valid date'],
  ['since', '2026-01-01T24:00:00Z', 'is not a valid date'],
] as const;

describe('dates at the edges of the range', () => {
  it('answers 400 naming since or until on every endpoint of the OpenAPI document that takes them', async () => {
    const { app, device } = await setup();
    const doc = (await http('GET', '/api/v1/openapi.json')).json;
    const ids: Record<string, string> = { deviceId: device.id };
    const failures: string[] = [];
    let endpoints = 0;
    for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, { parameters?: { in: string; name: string }[] }>>)) {
      const query = (ops.get?.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name);
      if (!query.includes('since') && !query.includes('until')) continue;
      endpoints++;
      // a list of a record this test has none of (a subscription, an event) may answer 404 first; never a 500
      const unknown = [...path.matchAll(/\{([^}]+)\}/g)].some((m) => !ids[m[1]]);
      const url = path.replace(/\{([^}]+)\}/g, (_, name: string) => ids[name] ?? randomUUID());
      const required = query.includes('fields') ? 'fields=rpm&' : '';
      for (const [name, value, says] of EDGES) {
        if (!query.includes(name)) continue;
        const res = await http('GET', `${url}?${required}${name}=${encodeURIComponent(value)}`, { auth: app.auth });
        if (unknown && res.status === 404) continue;
        if (res.status !== 400 || !res.json?.message?.startsWith(name) || !res.json.message.includes(says)) {
          failures.push(`${url}?${name}=${value} → ${res.status} ${res.json?.message}`);
        }
      }
    }
    expect(endpoints).toBeGreaterThanOrEqual(20);
    expect(failures).toEqual([]);
  });

  it('still reads the last day of February of a leap year and the ends of the range', async () => {
    const { app, device } = await setup();
    for (const q of ['since=2024-02-29', 'since=0', 'until=9999-12-31T23:59:59.999Z', 'since=1970-01-01T00:00:00Z&until=253402300799999']) {
      const res = await http('GET', `/api/v1/devices/${device.id}/messages?${q}`, { auth: app.auth });
      expect([q, res.status]).toEqual([q, 200]);
    }
  });

  it('refuses an odometer date off the calendar or out of range', async () => {
    const v = await vehicleWithDevice(t(), Date.now());
    const auth = v.app.auth;
    for (const date of ['2026-02-30', '-8640000000000000', '1969-12-31']) {
      refused(await http('POST', `/api/v1/vehicles/${v.vehicle.id}/odometers`, { auth, body: { odometer: { reading: 1, unit: 'km', date } } }), 'odometer.date');
    }
  });
});

describe('numbers beyond their unit\'s range in bodies', () => {
  it('refuses an odometer reading or a trigger threshold of 1e308 with 400 naming the field, and stores nothing', async () => {
    const v = await vehicleWithDevice(t(), Date.now());
    const auth = v.app.auth;
    const odometers = `/api/v1/vehicles/${v.vehicle.id}/odometers`;
    const triggers = `/api/v1/vehicles/${v.vehicle.id}/odometer_triggers`;
    for (const reading of ['1e308', '-1e308', '100000001', '1e154']) {
      refused(await http('POST', odometers, { auth, raw: `{"odometer":{"reading":${reading},"unit":"mi"}}` }), 'reading');
    }
    for (const threshold of ['1e308', '100000001', '-1e308']) {
      refused(await http('POST', triggers, { auth, raw: `{"odometerTrigger":{"type":"specific","threshold":${threshold},"unit":"km"}}` }), 'threshold');
    }
    expect((await http('GET', odometers, { auth })).json.odometers).toEqual([]);
    expect((await http('GET', triggers, { auth })).json.odometerTriggers).toEqual([]);
    // the largest reading taken, 1e8 mi, answers as a number
    expect((await http('POST', odometers, { auth, body: { odometer: { reading: 1e8, unit: 'mi' } } })).status).toBe(200);
    const latest = (await http('GET', `/api/v1/vehicles/${v.vehicle.id}/distances/_latest`, { auth })).json;
    expect(latest.distance.value).toBeCloseTo(160_934_400_000, -3);
  });

  it.each([
    ['a parametric min of 1e308', { type: 'parametric', parameter: 'vehicleSpeed', min: 1e308 }, "min 1e+308 is outside vehicleSpeed's range"],
    ['a parametric max of -1e308', { type: 'parametric', parameter: 'rpm', max: -1e308 }, "max -1e+308 is outside rpm's range 0..16383.75"],
    ['a parametric min beyond the parameter\'s range', { type: 'parametric', parameter: 'vehicleSpeed', min: 256 }, "vehicleSpeed's range 0..255"],
    ['a radius of 1e308', { type: 'radius', lon: 1, lat: 2, radius: 1e308 }, 'radius must be at most 20037509 m'],
    ['a radius center at longitude 1e308', { type: 'radius', lon: 1e308, lat: 2, radius: 10 }, 'lon'],
    ['a polygon position of 1e308', { type: 'polygon', coordinates: [[[0, 0], [1e308, 0], [1, 1], [0, 0]]] }, 'longitude 1e+308 is out of range'],
  ])('refuses a rule with %s with 400 naming the field', async (_, boundary, field) => {
    const { app, device } = await setup();
    refused(await http('POST', `/api/v1/devices/${device.id}/rules`, { auth: app.auth, body: { rule: { name: 'r', boundaries: [boundary] } } }), field);
    expect((await http('GET', `/api/v1/devices/${device.id}/rules`, { auth: app.auth })).json.rules).toEqual([]);
  });

  it('refuses a route duration of 1e308 with 400 saying why', async () => {
    const { app } = await setup();
    const line = { type: 'LineString', coordinates: [[-96.8, 32.78], [-96.8, 32.782]] };
    refused(await http('POST', '/api/v1/routes', { auth: app.auth, body: { route: { name: 'r', geojson: line, duration: 1e308 } } }), 'a route may take at most 24 h');
  });
});
