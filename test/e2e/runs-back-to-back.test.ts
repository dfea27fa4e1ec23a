// End to end on PGlite: one dummy driven over three stored routes back to back at 50×. Each run is stamped on the
// dummy's clock (from its start, or just after the previous run's last stamp), so none waits, each gives a trip of
// the real drive, and what is set between two runs falls between their data.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadStoredRoutes } from '../../simulator/route.js';
import { startE2ePlatform, type E2ePlatform } from '../helpers/e2e.js';
import { waitFor } from '../workers/receiver.js';

const stored = await loadStoredRoutes();
const ROUTES = ['DFW - Downtown Route 1', 'DFW - Home Loop 2 of 3', 'DFW - Circle the Block'].map((n) => stored.find((r) => r.name === n)!);
const VIN = 'VV4E2E5BACK000001';

let e: E2ePlatform;
beforeAll(async () => { e = await startE2ePlatform(); });
afterAll(async () => { await e?.close(); });
const api = (method: string, url: string, body?: unknown) => e.api(method, url, body);
const until = <T>(what: string, fn: () => Promise<T>) => waitFor(fn, what, 30_000);

describe('runs back to back at a speed factor', () => {
  it('three stored routes at 50× finish in under a minute, as three completed trips of the real drives; a reading and a from_now trigger set between runs see the next run', async () => {
    const started = Date.now();
    const { body: { dummy } } = await api('POST', '/api/v1/dummies', { dummy: { name: 'back to back' } });
    const runs = `/api/v1/dummies/${dummy.id}/runs`;
    const drive = async (routeId: string) => {
      const created = await api('POST', runs, { run: { vin: VIN, routeId, speed: 50 } });
      expect(created.status).toBe(201);
      expect(created.body.run.status).toMatchObject({ nextPassAt: null, waitReason: null });
      const run = await until('the run to finish', async () => {
        const r = (await api('GET', `${runs}/${created.body.run.id}`)).body.run;
        return r.status.state === 'finished' && r;
      });
      expect(run.status.outcome).toBe('completed');
      return run;
    };
    const trips = async (n: number) => until(`${n} completed trips`, async () => {
      const list = (await api('GET', `/api/v1/devices/${dummy.deviceId}/trips`)).body.trips;
      return list.length === n && list.every((t: any) => t.status === 'completed') && list;
    });

    await drive(ROUTES[0].id);
    const [first] = await trips(1);
    const vehicleId = first.vehicleId;
    // Set after the first run (whose stamps run ahead of the wall clock), before the second.
    const reading = await api('POST', `/api/v1/vehicles/${vehicleId}/odometers`, { odometer: { reading: 100, unit: 'km' } });
    expect(reading.status).toBe(200);
    const trigger = (await api('POST', `/api/v1/vehicles/${vehicleId}/odometer_triggers`,
      { odometerTrigger: { type: 'from_now', threshold: 300, unit: 'm' } })).body.odometerTrigger;
    const before = (await api('GET', `/api/v1/vehicles/${vehicleId}/distances/_latest`)).body.distance;
    expect(before.value).toBeCloseTo(100_000, 0);

    const second = await drive(ROUTES[1].id);
    await trips(2);
    const after = (await api('GET', `/api/v1/vehicles/${vehicleId}/distances/_latest`)).body.distance;
    expect(Math.abs((after.value - before.value) / second.status.distance - 1)).toBeLessThan(0.02);
    const fired = await until('the trigger event', async () => {
      const list = (await api('GET', `/api/v1/vehicles/${vehicleId}/events?type=distance-trigger`)).body.events;
      return list?.length && list;
    });
    expect(Date.parse(fired[0].timestamp)).toBeGreaterThan(Date.parse(trigger.createdAt));

    await drive(ROUTES[2].id);
    const all = (await trips(3)).reverse(); // oldest first
    expect(Date.now() - started).toBeLessThan(60_000);
    all.forEach((trip: any, i: number) => {
      const route = ROUTES[i];
      expect(Math.abs(trip.stats.distanceByGPS / route.distanceByGPS - 1), `${route.name} distance`).toBeLessThan(0.02);
      expect(Math.abs(trip.stats.duration / route.duration - 1), `${route.name} duration`).toBeLessThan(0.05);
      if (i > 0) expect(Date.parse(trip.start)).toBeGreaterThan(Date.parse(all[i - 1].stop));
    });
  }, 90_000);
});
