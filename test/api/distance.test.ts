import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { runStage, storeFrames, vehicleWithDevice } from '../db/distance.fixtures.js';

let t: TestApp;
beforeAll(async () => { t = await buildTestApp(); });
afterAll(async () => { await t?.close(); });

const BASE = 'http://localhost:3999';
/** Frames half an hour ago, 100 m apart every 5 s (GPS), so readings dated before them anchor them. */
const T0 = Date.now() - 1_800_000;
const leg = (fromS: number, n: number) => Array.from({ length: n }, (_, k) => ({ s: fromS + k * 5, north: (fromS / 5 + k) * 100, speed: 72 }));

type Auth = { auth: string };
const req = (app: Auth, method: 'GET' | 'POST' | 'DELETE', url: string, payload?: object, headers: Record<string, string> = {}) =>
  t.app.inject({ method, url, payload, headers: { authorization: app.auth, ...headers } });

async function drivenVehicle(frames = leg(0, 11)) {
  const v = await vehicleWithDevice(t, T0);
  await runStage(t, async (trx) => [await storeFrames(trx, t, v.device.id, v.vehicle.id, T0, frames)]);
  return v;
}

describe('odometer readings', () => {
  it("dates a reading on the vehicle's clock: a dummy's data ahead of the wall clock moves \"now\" with it", async () => {
    // a run at a speed factor stamps ahead of the wall clock: the vehicle's latest frame is 20 minutes from now
    const ahead = Date.now() + 1_200_000;
    const v = await vehicleWithDevice(t, ahead);
    await runStage(t, async (trx) => [await storeFrames(trx, t, v.device.id, v.vehicle.id, ahead, leg(0, 3))]);
    const url = `/api/v1/vehicles/${v.vehicle.id}/odometers`;
    const dated = await req(v.app, 'POST', url, { odometer: { reading: 1, unit: 'km', date: new Date(ahead - 60_000).toISOString() } });
    expect(dated.statusCode).toBe(200);
    const byDefault = (await req(v.app, 'POST', url, { odometer: { reading: 2, unit: 'km' } })).json().odometer;
    expect(Date.parse(byDefault.date)).toBe(ahead + 10_000);
    const beyond = await req(v.app, 'POST', url, { odometer: { reading: 3, unit: 'km', date: new Date(ahead + 600_000).toISOString() } });
    expect(beyond.json()).toEqual({ statusCode: 400, error: 'Bad Request', message: 'odometer.date must not be in the future' });
  });

  it('stores a reading in meters, lists, gets and deletes it', async () => {
    const { app, vehicle } = await drivenVehicle([]);
    const res = await req(app, 'POST', `/api/v1/vehicles/${vehicle.id}/odometers`, { odometer: { reading: 15000, unit: 'km' } });
    expect(res.statusCode).toBe(200);
    const odo = res.json().odometer;
    expect(odo).toMatchObject({ vehicleId: vehicle.id, reading: 15_000_000, unit: 'm' });
    expect(Math.abs(Date.parse(odo.date) - Date.now())).toBeLessThan(10_000);
    expect(odo.links).toEqual({ self: `${BASE}/api/v1/odometers/${odo.id}`, vehicle: `${BASE}/api/v1/vehicles/${vehicle.id}` });
    const mi = (await req(app, 'POST', `/api/v1/vehicles/${vehicle.id}/odometers`,
      { odometer: { reading: 10, unit: 'mi', date: '2026-01-02T03:04:05.000Z' } })).json().odometer;
    expect(mi).toMatchObject({ reading: 16093.44, date: '2026-01-02T03:04:05.000Z' });
    const list = (await req(app, 'GET', `/api/v1/vehicles/${vehicle.id}/odometers?limit=1`)).json();
    expect(list.odometers.map((o: any) => o.id)).toEqual([odo.id]);
    expect(list.meta.pagination).toMatchObject({ remaining: 1, limit: 1, sortDir: 'desc' });
    expect((await req(app, 'GET', list.meta.pagination.links.prior)).json().odometers.map((o: any) => o.id)).toEqual([mi.id]);
    expect((await req(app, 'GET', `/api/v1/odometers/${odo.id}`)).json().odometer).toEqual(odo);
    const other = await t.make.application();
    expect((await req(other, 'GET', `/api/v1/odometers/${odo.id}`)).statusCode).toBe(404);
    expect((await req(app, 'DELETE', `/api/v1/odometers/${odo.id}`)).statusCode).toBe(204);
    expect((await req(app, 'GET', `/api/v1/odometers/${odo.id}`)).json()).toEqual({ statusCode: 404, error: 'Not Found', message: 'Not found' });
  });

  it('refuses bad input with a 400 naming the field', async () => {
    const { app, vehicle } = await drivenVehicle([]);
    const odo = (body: object) => req(app, 'POST', `/api/v1/vehicles/${vehicle.id}/odometers`, { odometer: body });
    const trg = (body: object) => req(app, 'POST', `/api/v1/vehicles/${vehicle.id}/odometer_triggers`, { odometerTrigger: body });
    const cases: [Promise<any>, RegExp][] = [
      [odo({ reading: 10, unit: 'furlong' }), /odometer\.unit/],
      [odo({ reading: -1, unit: 'km' }), /odometer\.reading/],
      [odo({ unit: 'km' }), /reading/],
      [odo({ reading: 10, unit: 'km', date: 'yesterday' }), /odometer\.date/],
      [trg({ type: 'sometimes', threshold: 5, unit: 'km' }), /odometerTrigger\.type/],
      [trg({ type: 'from_now', threshold: 0, unit: 'km' }), /odometerTrigger\.threshold/],
      [trg({ type: 'milestone', threshold: 5, unit: 'yd' }), /odometerTrigger\.unit/],
      [req(app, 'GET', `/api/v1/vehicles/${vehicle.id}/distances/_latest?since=2026-02-01&until=2026-01-01`), /since/],
      [req(app, 'GET', `/api/v1/vehicles/${vehicle.id}/odometers?since=2026-02-01&until=2026-01-01`), /since/],
      [req(app, 'GET', `/api/v1/vehicles/${vehicle.id}/distances/_latest`, undefined, { 'x-service-unit': 'parsec' }), /x-service-unit/],
      [req(app, 'GET', `/api/v1/vehicles/${vehicle.id}/distances`, undefined, { 'x-vinli-unit': 'ft' }), /x-vinli-unit/],
    ];
    for (const [res, field] of cases) {
      const r = await res;
      expect(r.statusCode, r.body).toBe(400);
      expect(r.json().message).toMatch(field);
    }
  });
});

describe('distance estimate', () => {
  it('answers what the platform saw when there is no reading, and says so', async () => {
    const { app, vehicle } = await drivenVehicle();
    const res = await req(app, 'GET', `/api/v1/vehicles/${vehicle.id}/distances/_latest`);
    expect(res.statusCode).toBe(200);
    const d = res.json().distance;
    expect(d).toMatchObject({ vehicleId: vehicle.id, unit: 'm', lastOdometerDate: null, basis: 'observed' });
    expect(d.value).toBeGreaterThan(990);
    expect(d.value).toBeLessThan(1010);
    const empty = await drivenVehicle([]);
    expect((await req(empty.app, 'GET', `/api/v1/vehicles/${empty.vehicle.id}/distances/_latest`)).json().distance)
      .toMatchObject({ value: 0, confidenceMin: 0, confidenceMax: 0, basis: 'observed' });
  });

  it('adds the distance since the latest reading, converts units and widens the interval with distance', async () => {
    const { app, vehicle, device } = await drivenVehicle(leg(0, 1));
    await req(app, 'POST', `/api/v1/vehicles/${vehicle.id}/odometers`, { odometer: { reading: 1000, unit: 'km', date: new Date(T0 - 60_000).toISOString() } });
    const latest = async (headers: Record<string, string> = {}, query = '') =>
      (await req(app, 'GET', `/api/v1/vehicles/${vehicle.id}/distances/_latest${query}`, undefined, headers)).json().distance;
    const start = await latest();
    expect(start).toMatchObject({ value: 1_000_000, confidenceMin: 999_950, confidenceMax: 1_000_050, basis: 'odometer',
      lastOdometerDate: new Date(T0 - 60_000).toISOString() });
    await runStage(t, async (trx) => [await storeFrames(trx, t, device.id, vehicle.id, T0, leg(5, 10))]); // +1 000 m by GPS
    const m = await latest();
    expect(m.value).toBeGreaterThan(1_000_990);
    expect(m.value).toBeLessThan(1_001_010);
    expect(m.confidenceMax - m.value).toBeCloseTo(50 + 0.01 * (m.value - 1_000_000), 1); // 50 m + 1% of GPS meters
    expect(m.value - m.confidenceMin).toBeCloseTo(m.confidenceMax - m.value, 1);
    const km = await latest({ 'x-service-unit': 'km' });
    expect(km).toMatchObject({ unit: 'km' });
    expect(km.value).toBeCloseTo(m.value / 1000, 4);
    const mi = await latest({ 'x-vinli-unit': 'mi' });
    expect(mi).toMatchObject({ unit: 'mi' });
    expect(mi.value).toBeCloseTo(m.value / 1609.344, 4);
    // `until` before the drive: the reading alone; `since` after the reading: no reading in the window.
    expect((await latest({}, `?until=${T0 + 2_000}`)).value).toBe(1_000_000);
    expect(await latest({}, `?since=${T0}`)).toMatchObject({ basis: 'observed', lastOdometerDate: null });
    expect(m.links.self).toMatch(new RegExp(`^${BASE}/api/v1/vehicles/${vehicle.id}/distances/_latest\\?until=\\d+$`));
  });

  it('keeps the estimate from a reading when a late frame changes the distance before it', async () => {
    const { app, vehicle, device } = await drivenVehicle([{ s: -300, north: 0, speed: 36 }, { s: -200, north: 100, speed: 36 }, ...leg(0, 3)]);
    await req(app, 'POST', `/api/v1/vehicles/${vehicle.id}/odometers`, { odometer: { reading: 5000, unit: 'm', date: new Date(T0 - 60_000).toISOString() } });
    const latest = async (headers: Record<string, string> = {}) =>
      (await req(app, 'GET', `/api/v1/vehicles/${vehicle.id}/distances/_latest`, undefined, headers)).json().distance;
    const before = await latest();
    // After the reading (−60 s): 100 m from −200 s to 0 s, then 2 × 100 m.
    expect(before.value).toBeGreaterThan(5295);
    expect(before.value).toBeLessThan(5305);
    // A detour 200 m east at −250 s, before the reading: the observed total grows, the estimate from the reading does not.
    await runStage(t, async (trx) => [await storeFrames(trx, t, device.id, vehicle.id, T0, [{ s: -250, north: 50, east: 200, speed: 36 }])]);
    const after = await latest();
    expect(after.value).toBeCloseTo(before.value, 6);
    // Observed: 100 (−300 → −200) became 2 × 206 m, so 400 m → about 712 m.
    const total = await t.db.knex('vehicle_distances').where({ vehicle_id: vehicle.id }).first();
    expect(Number(total.travelled_m)).toBeGreaterThan(705);
    expect(Number(total.travelled_m)).toBeLessThan(720);
  });

  it('lists the estimate from each reading; _best is the narrowest', async () => {
    const { app, vehicle } = await drivenVehicle();
    const post = (km: number, date: number) => req(app, 'POST', `/api/v1/vehicles/${vehicle.id}/odometers`,
      { odometer: { reading: km, unit: 'km', date: new Date(date).toISOString() } });
    await post(500, T0 - 60_000); // before the 1 000 m drive
    await post(501.5, T0 + 600_000); // after it
    const list = (await req(app, 'GET', `/api/v1/vehicles/${vehicle.id}/distances`, undefined, { 'x-vinli-unit': 'km' })).json().distances;
    expect(list.map((d: any) => d.lastOdometerDate)).toEqual([new Date(T0 + 600_000).toISOString(), new Date(T0 - 60_000).toISOString()]);
    expect(list[0].value).toBe(501.5);
    expect(list[1].value).toBeCloseTo(501, 1);
    const best = (await req(app, 'GET', `/api/v1/vehicles/${vehicle.id}/distances/_best`)).json().distance;
    expect(best).toMatchObject({ value: 501_500, confidenceMin: 501_450, confidenceMax: 501_550, unit: 'm' });
  });
});

describe('odometer triggers', () => {
  it('creates (threshold in meters), lists, gets, counts events and deletes', async () => {
    const { app, vehicle, device } = await drivenVehicle([]);
    const res = await req(app, 'POST', `/api/v1/vehicles/${vehicle.id}/odometer_triggers`, { odometerTrigger: { type: 'from_now', threshold: 0.5, unit: 'km' } });
    expect(res.statusCode).toBe(200);
    const trg = res.json().odometerTrigger;
    expect(trg).toMatchObject({ vehicleId: vehicle.id, type: 'from_now', threshold: 500, unit: 'm', events: 0 });
    expect(trg.links).toEqual({ self: `${BASE}/api/v1/odometer_triggers/${trg.id}`, vehicle: `${BASE}/api/v1/vehicles/${vehicle.id}` });
    const later = Date.now() + 5_000;
    await runStage(t, async (trx) => [await storeFrames(trx, t, device.id, vehicle.id, later, leg(0, 8))]);
    expect((await req(app, 'GET', `/api/v1/odometer_triggers/${trg.id}`)).json().odometerTrigger.events).toBe(1);
    const list = (await req(app, 'GET', `/api/v1/vehicles/${vehicle.id}/odometer_triggers`)).json();
    expect(list.odometerTriggers.map((x: any) => x.id)).toEqual([trg.id]);
    const events = (await req(app, 'GET', `/api/v1/devices/${device.id}/events?type=distance-trigger&until=${later + 3_600_000}`)).json().events;
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ eventType: 'distance-trigger', object: { id: trg.id, type: 'odometer-trigger' } });
    expect(events[0].meta.odometerTrigger).toMatchObject({ id: trg.id, type: 'from_now', threshold: 500, events: 1 });
    expect(events[0].meta.estimatedOdometer).toBeCloseTo(500, -1);
    const other = await t.make.application();
    expect((await req(other, 'GET', `/api/v1/odometer_triggers/${trg.id}`)).statusCode).toBe(404);
    expect((await req(app, 'DELETE', `/api/v1/odometer_triggers/${trg.id}`)).statusCode).toBe(204);
    expect((await req(app, 'GET', `/api/v1/odometer_triggers/${trg.id}`)).statusCode).toBe(404);
  });
});

describe('readings that make the odometer go backwards', () => {
  const at = (s: number) => new Date(T0 + s * 1000).toISOString();
  const post = (app: Auth, vehicleId: string, odometer: object) => req(app, 'POST', `/api/v1/vehicles/${vehicleId}/odometers`, { odometer });

  it('refuses one dated after a reading with a smaller value, or before it with a larger one, unless allowDecrease says so', async () => {
    const { app, vehicle } = await drivenVehicle();
    const first = (await post(app, vehicle.id, { reading: 10, unit: 'km', date: at(60) })).json().odometer;
    const later = await post(app, vehicle.id, { reading: 9.5, unit: 'km', date: at(120) });
    expect(later.statusCode).toBe(400);
    expect(later.json()).toEqual({
      statusCode: 400, error: 'Bad Request',
      message: `odometer.reading 9.5 km on ${at(120)} is less than the reading of 10 km on ${at(60)} (${first.id}): an odometer does not `
        + 'go backwards; set odometer.allowDecrease to true to record it anyway (a replaced instrument cluster)',
    });
    const earlier = await post(app, vehicle.id, { reading: 10.5, unit: 'km', date: at(30) });
    expect(earlier.statusCode).toBe(400);
    expect(earlier.json().message).toMatch(/^odometer\.reading 10\.5 km on .* is more than the reading of 10 km on .*: an odometer does not go backwards/);
    // neither was stored
    expect((await req(app, 'GET', `/api/v1/vehicles/${vehicle.id}/odometers`)).json().odometers.map((o: any) => o.id)).toEqual([first.id]);
    // readings that agree with it are taken, before and after it; so is an equal one
    expect((await post(app, vehicle.id, { reading: 9.9, unit: 'km', date: at(30) })).statusCode).toBe(200);
    expect((await post(app, vehicle.id, { reading: 10, unit: 'km', date: at(90) })).statusCode).toBe(200);
    // a bad flag is a 400 too
    expect((await post(app, vehicle.id, { reading: 1, unit: 'km', date: at(120), allowDecrease: 'perhaps' })).statusCode).toBe(400);
    // an explicit flag records it (a replaced cluster), and the estimate starts again from it
    const reset = await post(app, vehicle.id, { reading: 2, unit: 'km', date: at(120), allowDecrease: true });
    expect(reset.statusCode).toBe(200);
    const d = (await req(app, 'GET', `/api/v1/vehicles/${vehicle.id}/distances/_latest?until=${T0 + 130_000}`)).json().distance;
    expect(d).toMatchObject({ value: 2000, lastOdometerDate: at(120), basis: 'odometer' });
  });

  it('never lets the estimate decrease over time, readings and frames mixed', async () => {
    // 1 km (s 0-50), a reading of 10 km at 60 s, 1.8 km more after it (s 100-150: 1 km in the gap, 1 km as frames), a
    // reading of 11.5 km at 160 s (the platform measured more than the odometer shows), 2 km more (s 200-250), then
    // frames of 55-95 s arriving late (the gap measured by them instead), and a reading taken before them
    const { app, vehicle, device } = await drivenVehicle();
    const drive = (frames: ReturnType<typeof leg>) => runStage(t, async (trx) => [await storeFrames(trx, t, device.id, vehicle.id, T0, frames)]);
    expect((await post(app, vehicle.id, { reading: 10, unit: 'km', date: at(60) })).statusCode).toBe(200);
    await drive(leg(100, 11));
    expect((await post(app, vehicle.id, { reading: 11.5, unit: 'km', date: at(160) })).statusCode).toBe(200);
    await drive(leg(200, 11));
    await drive(leg(55, 9));
    expect((await post(app, vehicle.id, { reading: 9.95, unit: 'km', date: at(40) })).statusCode).toBe(200);
    const values: number[] = [];
    for (let s = 0; s <= 300; s += 5) {
      values.push((await req(app, 'GET', `/api/v1/vehicles/${vehicle.id}/distances/_latest?until=${T0 + s * 1000}`)).json().distance.value);
    }
    for (let i = 1; i < values.length; i++) expect(values[i], `at ${i * 5} s: ${values.slice(0, i + 1).join(', ')}`).toBeGreaterThanOrEqual(values[i - 1]);
    // just before the second reading: 10 km + 1.8 km; at it, still 11.8 km, not 11.5; at the end the second reading + 2 km
    expect(values[155 / 5]).toBeCloseTo(11_800, 0);
    expect(values[160 / 5]).toBeCloseTo(11_800, 0);
    expect(values.at(-1)).toBeCloseTo(13_500, 0);
  });
});
