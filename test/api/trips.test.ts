import polyline from '@mapbox/polyline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { at, BASE, deviceOnVehicle, drive, feed, LON } from '../db/trips.fixtures.js';

let t: TestApp;
beforeAll(async () => { t = await buildTestApp(); });
afterAll(async () => { await t?.close(); });

const setup = () => deviceOnVehicle(t);

describe('trips API', () => {
  it('lists completed and open trips of a device and a vehicle, newest first, with stats, points, preview and links', async () => {
    const { app, device, vehicle } = await setup();
    await feed(t, device.id, drive(0, 600, 40), 20);
    const opening = drive(2000, 600, 40).slice(0, 30);
    await feed(t, device.id, opening, 20); // open: no shutdown yet
    const res = await t.get(`/api/v1/devices/${device.id}/trips`, app.auth);
    expect(res.statusCode).toBe(200);
    const { trips, meta } = res.json();
    expect(trips.map((x: any) => x.status)).toEqual(['started', 'completed']);
    const [open, done] = trips;
    expect(open.stop).toBeNull();
    expect(open.stats.messageCount).toBe(30);
    // the open trip's preview is its track so far: a straight line north from its first to its last location
    expect(polyline.decode(open.preview))
      .toEqual([opening[0], opening[29]].map((f) => [expect.closeTo(f.lat!, 4), expect.closeTo(LON, 4)]));
    expect(done.start).toBe(at(0).toISOString());
    expect(done.stop).toBe(at(600).toISOString());
    expect(done.vehicleId).toBe(vehicle.id);
    expect(done.meta).toEqual({ startReason: 'startup', endReason: 'shutdown' });
    expect(done.startPoint).toEqual({ type: 'Point', coordinates: [LON, expect.closeTo(32.78, 6)] });
    expect(done.stats.distanceByGPS).toBeGreaterThan(6000);
    const track = polyline.decode(done.preview);
    expect(track.length).toBeGreaterThanOrEqual(2);
    for (const key of ['locations', 'messages', 'events', 'snapshots']) {
      expect(done.links[key]).toContain(`?since=${BASE - 1}&until=${BASE + 600_000}`);
    }
    expect(done.links.self).toMatch(new RegExp(`/api/v1/trips/${done.id}$`));
    expect(meta.pagination).toMatchObject({ remaining: 0, limit: 20, sortDir: 'desc' });
    const byId = await t.get(done.links.self, app.auth);
    expect(byId.json().trip).toEqual(done);
    const veh = await t.get(`/api/v1/vehicles/${vehicle.id}/trips?limit=1`, app.auth);
    expect(veh.json().trips.map((x: any) => x.id)).toEqual([open.id]);
    expect(veh.json().meta.pagination.remaining).toBe(1);
    const prior = await t.get(veh.json().meta.pagination.links.prior, app.auth);
    expect(prior.json().trips.map((x: any) => x.id)).toEqual([done.id]);
    const msgs = await t.get(`${done.links.messages}&limit=100`, app.auth);
    expect(msgs.json().messages.length + msgs.json().meta.pagination.remaining).toBe(done.stats.messageCount);
  });

  it('hides trips of devices the application cannot read and answers 404 for unknown ids', async () => {
    const { device } = await setup();
    await feed(t, device.id, drive(0, 120, 30), 50);
    const other = await t.make.application();
    expect((await t.get(`/api/v1/devices/${device.id}/trips`, other.auth)).statusCode).toBe(404);
    const [trip] = await t.db.knex('trips').where({ device_id: device.id });
    expect((await t.get(`/api/v1/trips/${trip.id}`, other.auth)).statusCode).toBe(404);
  });

  it("lists a vehicle's trips and report cards from the 20 most recent of its devices that the application can read", async () => {
    const { app: old, device: first, vehicle } = await setup(); // `first` joined the vehicle before the 20 below
    await feed(t, first.id, drive(0, 120, 30), 50);
    const recent = await t.make.application();
    const devices = [];
    for (let i = 0; i < 20; i++) {
      const d = await t.make.device(recent.principal);
      await t.repos.vehicles.associate(d.id, vehicle.id, at(-50 + i));
      devices.push(d);
    }
    await feed(t, devices[0].id, drive(1000, 120, 30), 50);
    const lists = async (auth: string) => Promise.all(['trips', 'report_cards'].map(async (list) => {
      const res = await t.get(`/api/v1/vehicles/${vehicle.id}/${list}`, auth);
      return res.statusCode === 200 ? [...(res.json().trips ?? []), ...(res.json().reportCards ?? [])].map((x: any) => x.deviceId) : res.statusCode;
    }));
    expect(await lists(recent.auth)).toEqual([[devices[0].id], [devices[0].id]]);
    // The cut counts only the devices the application can read: the 20 newer ones are another application's,
    // so `first` is still among `old`'s most recent.
    expect(await lists(old.auth)).toEqual([[first.id], [first.id]]);
    expect(await lists((await t.make.application()).auth)).toEqual([404, 404]);
  });

  it("keeps a vehicle's trips and report cards when 40 devices of no application or another one report its VIN", async () => {
    const { app, device, vehicle } = await setup();
    for (let i = 0; i < 4; i++) await feed(t, device.id, drive(i * 1000, 120, 30), 50);
    const lists = async () => Promise.all(['trips', 'report_cards'].map(async (list) => {
      const res = await t.get(`/api/v1/vehicles/${vehicle.id}/${list}`, app.auth);
      expect(res.statusCode, list).toBe(200);
      return [...(res.json().trips ?? []), ...(res.json().reportCards ?? [])].map((x: any) => x.deviceId);
    }));
    const own = [Array(4).fill(device.id), Array(4).fill(device.id)];
    expect(await lists()).toEqual(own);
    const stranger = await t.make.application();
    for (let i = 0; i < 40; i++) {
      // Half authorized for no application, half another tenant's: each joins the vehicle after `device`.
      const d = await t.make.device(i % 2 ? stranger.principal : undefined);
      await t.repos.vehicles.associate(d.id, vehicle.id, at(5000 + i));
    }
    expect(await lists()).toEqual(own);
    // A newer device of the application's own still counts among its 20 most recent, beside the first.
    const second = await t.make.device(app.principal);
    await t.repos.vehicles.associate(second.id, vehicle.id, at(6000));
    await feed(t, second.id, drive(7000, 120, 30), 50);
    expect((await lists()).map((ids) => new Set(ids))).toEqual([new Set([device.id, second.id]), new Set([device.id, second.id])]);
  });

  it('refuses since after until and malformed bounds with 400 naming the field', async () => {
    const { app, device } = await setup();
    const res = await t.get(`/api/v1/devices/${device.id}/trips?since=2026-01-02&until=2026-01-01`, app.auth);
    expect(res.statusCode).toBe(400);
    expect(res.json().message).toMatch(/since .* must not be after until/);
    const bad = await t.get(`/api/v1/devices/${device.id}/report_cards?until=yesterday`, app.auth);
    expect(bad.statusCode).toBe(400);
    expect(bad.json().message).toMatch(/^until/);
  });
});
