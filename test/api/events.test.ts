import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { at, createRule, ingest } from '../db/rules.fixtures.js';

let t: TestApp;
beforeAll(async () => { t = await buildTestApp(); });
afterAll(async () => { await t?.close(); });

const BASE = 'http://localhost:3999';
const LON = -96.797;
const LAT = 32.7767;

const get = (auth: string, url: string) => t.app.inject({ method: 'GET', url: url.replace(BASE, ''), headers: { authorization: auth } });

/** A device with a vehicle, startup/shutdown events and a radius rule that entered at 10 s and left at 20 s. */
async function setup() {
  const app = await t.make.application();
  const device = await t.make.device(app.principal);
  const vehicle = await t.repos.vehicles.upsertByVin(`1HGCM82633A${String(Math.floor(Math.random() * 1e6)).padStart(6, '0')}`, async () => ({}));
  await t.repos.vehicles.associate(device.id, vehicle.id, at(-100));
  const frame = (eventType: string, s: number) => ({
    deviceId: device.id, vehicleId: vehicle.id, timestamp: at(s), eventType, objectType: 'vehicle', objectId: vehicle.id, meta: null,
  });
  const [startup, shutdown] = await t.repos.events.insert([frame('startup', 0), frame('shutdown', 30)]);
  const rule = await createRule(t, app, device.id, { name: 'depot', boundaries: [{ type: 'radius', lon: LON, lat: LAT, radius: 50 }] });
  const [enter, leave] = await ingest(t, device.id, [{ ts: at(10), lon: LON, lat: LAT }, { ts: at(20), lon: LON + 0.01, lat: LAT }]);
  return { app, device, vehicle, rule, startup, shutdown, enter, leave };
}

describe('GET /api/v1/devices/{deviceId}/events', () => {
  it('lists events newest first, each with its times, device, vehicle, object and meta', async () => {
    const s = await setup();
    const res = await get(s.app.auth, `/api/v1/devices/${s.device.id}/events`);
    expect(res.statusCode).toBe(200);
    const { events, meta } = res.json();
    expect(events.map((e: { id: string }) => e.id)).toEqual([s.shutdown.id, s.leave.id, s.enter.id, s.startup.id]);
    expect(events[3]).toEqual({
      id: s.startup.id, timestamp: at(0).toISOString(), deviceId: s.device.id, vehicleId: s.vehicle.id,
      stored: s.startup.stored.toISOString(), storageLatency: s.startup.stored.getTime() - at(0).getTime(),
      eventType: 'startup', object: { id: s.vehicle.id, type: 'vehicle' }, meta: null,
      links: { self: `${BASE}/api/v1/events/${s.startup.id}`, notifications: `${BASE}/api/v1/events/${s.startup.id}/notifications` },
    });
    expect(events[1]).toMatchObject({
      eventType: 'rule-leave', vehicleId: s.vehicle.id, object: { id: s.rule.id, type: 'rule', appId: s.app.id },
      meta: { direction: 'leave', firstEval: false, rule: { id: s.rule.id, evaluated: true, covered: false },
        message: { timestamp: at(20).toISOString(), snapshot: { location: { lat: LAT, lon: LON + 0.01 } } } },
    });
    expect(meta.pagination).toMatchObject({ remaining: 0, limit: 20, since: '1970-01-01T00:00:00.000Z', sortDir: 'desc', links: {} });
  });

  it('walks the pages through `prior`, which keeps the filters', async () => {
    const s = await setup();
    const first = (await get(s.app.auth, `/api/v1/devices/${s.device.id}/events?limit=1&objectType=vehicle`)).json();
    expect(first.events.map((e: { id: string }) => e.id)).toEqual([s.shutdown.id]);
    expect(first.meta.pagination).toMatchObject({ remaining: 1, limit: 1 });
    expect(first.meta.pagination.links.prior).toBe(
      `${BASE}/api/v1/devices/${s.device.id}/events?objectType=vehicle&limit=1&until=${at(30).getTime() - 1}`);
    const second = (await get(s.app.auth, first.meta.pagination.links.prior)).json();
    expect(second.events.map((e: { id: string }) => e.id)).toEqual([s.startup.id]);
    expect(second.meta.pagination).toMatchObject({ remaining: 0, links: {} });
  });

  it('walks every event of the device with limit 3', async () => {
    const s = await setup();
    const seen: string[] = [];
    let url: string | undefined = `/api/v1/devices/${s.device.id}/events?limit=3`;
    while (url) {
      const body: any = (await get(s.app.auth, url)).json();
      seen.push(...body.events.map((e: { id: string }) => e.id));
      url = body.meta.pagination.links.prior;
    }
    expect(seen).toEqual([s.shutdown.id, s.leave.id, s.enter.id, s.startup.id]);
  });

  const typeCases: [string, string[]][] = [
    ['startup', ['startup']], ['rule-enter', ['enter']], ['rule-*', ['leave', 'enter']], ['rule', ['leave', 'enter']],
    ['trip-*', []],
  ];
  for (const [type, expected] of typeCases) {
    it(`filters by type=${type}`, async () => {
      const s = await setup();
      const ids = expected.map((k) => (s as any)[k].id);
      const body = (await get(s.app.auth, `/api/v1/devices/${s.device.id}/events?type=${encodeURIComponent(type)}`)).json();
      expect(body.events.map((e: { id: string }) => e.id)).toEqual(ids);
    });
  }

  it('filters the events of one rule by objectId', async () => {
    const s = await setup();
    const other = await createRule(t, s.app, s.device.id, { name: 'slow', boundaries: [{ type: 'parametric', parameter: 'vehicleSpeed', min: null, max: 10 }] });
    const [slow] = await ingest(t, s.device.id, [{ ts: at(40), data: { vehicleSpeed: 5 } }]);
    expect(slow.objectId).toBe(other.id);
    const body = (await get(s.app.auth, `/api/v1/devices/${s.device.id}/events?type=rule-*&objectId=${s.rule.id}`)).json();
    expect(body.events.map((e: { id: string }) => e.id)).toEqual([s.leave.id, s.enter.id]);
  });

  it('shows rule events only to the application that owns the rule', async () => {
    const s = await setup();
    const other = await t.make.application('consumer');
    await t.repos.devices.authorize(s.device.id, other.id);
    const body = (await get(other.auth, `/api/v1/devices/${s.device.id}/events`)).json();
    expect(body.events.map((e: { id: string }) => e.id)).toEqual([s.shutdown.id, s.startup.id]);
    expect((await get(other.auth, `/api/v1/events/${s.enter.id}`)).statusCode).toBe(404);
  });

  it('answers 404 for a device the application cannot read and 400 for an objectId that is not a UUID', async () => {
    const s = await setup();
    const stranger = await t.make.application();
    expect((await get(stranger.auth, `/api/v1/devices/${s.device.id}/events`)).json())
      .toEqual({ statusCode: 404, error: 'Not Found', message: 'Not found' });
    expect((await get(s.app.auth, `/api/v1/devices/${s.device.id}/events?objectId=abc`)).json())
      .toEqual({ statusCode: 400, error: 'Bad Request', message: 'objectId must be a UUID, got "abc"' });
  });

  it('answers 400 for a type or objectType no event has, as a subscription does for an unknown eventType', async () => {
    const s = await setup();
    for (const type of ['startups', 'nope-*', '-*', '*', '%']) {
      const res = await get(s.app.auth, `/api/v1/devices/${s.device.id}/events?type=${encodeURIComponent(type)}`);
      expect(res.statusCode, type).toBe(400);
      expect(res.json().message).toMatch(new RegExp(`^type must be an event type \\(startup, .*\\); got "${type.replace(/[*%]/g, '\\$&')}"$`));
    }
    const res = await get(s.app.auth, `/api/v1/vehicles/${s.vehicle.id}/events?objectType=car`);
    expect(res.json()).toEqual({ statusCode: 400, error: 'Bad Request', message: 'objectType must be one of vehicle, trip, rule, odometer-trigger, device, command; got "car"' });
  });
});

describe('GET /api/v1/vehicles/{vehicleId}/events and /api/v1/events/{eventId}', () => {
  it('lists the vehicle\'s events from the devices the application can read', async () => {
    const s = await setup();
    const otherApp = await t.make.application();
    const otherDevice = await t.make.device(otherApp.principal);
    await t.repos.vehicles.associate(otherDevice.id, s.vehicle.id, at(-50));
    await t.repos.events.insert([{ deviceId: otherDevice.id, vehicleId: s.vehicle.id, timestamp: at(5), eventType: 'startup', objectType: 'vehicle', objectId: s.vehicle.id, meta: null }]);
    const body = (await get(s.app.auth, `/api/v1/vehicles/${s.vehicle.id}/events?limit=2`)).json();
    expect(body.events.map((e: { id: string }) => e.id)).toEqual([s.shutdown.id, s.leave.id]);
    expect(body.meta.pagination.links.prior).toBe(`${BASE}/api/v1/vehicles/${s.vehicle.id}/events?limit=2&until=${at(20).getTime() - 1}`);
    const older = (await get(s.app.auth, body.meta.pagination.links.prior)).json();
    expect(older.events.map((e: { id: string }) => e.id)).toEqual([s.enter.id, s.startup.id]);
    const theirs = (await get(otherApp.auth, `/api/v1/vehicles/${s.vehicle.id}/events`)).json();
    expect(theirs.events.map((e: { deviceId: string }) => e.deviceId)).toEqual([otherDevice.id]);
  });

  it('answers 404 for a vehicle the application cannot see', async () => {
    const s = await setup();
    const stranger = await t.make.application();
    expect((await get(stranger.auth, `/api/v1/vehicles/${s.vehicle.id}/events`)).statusCode).toBe(404);
  });

  it('gets one event, and 404 for an unknown id', async () => {
    const s = await setup();
    const res = await get(s.app.auth, `/api/v1/events/${s.enter.id}`);
    expect(res.statusCode).toBe(200);
    const list = (await get(s.app.auth, `/api/v1/devices/${s.device.id}/events?type=rule-enter`)).json();
    expect(res.json()).toEqual({ event: list.events[0] });
    expect(res.json().event.meta).toMatchObject({ direction: 'enter', firstEval: true });
    expect((await get(s.app.auth, '/api/v1/events/00000000-0000-4000-8000-000000000000')).statusCode).toBe(404);
  });
});
