import polyline from '@mapbox/polyline';
import { connectAsync } from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Platform } from '../../bin/platform.js';
import { decodePolyline, loadStoredRoutes, type StoredRoute } from '../../simulator/route.js';
import { startDevice } from '../../simulator/device.js';
import type { Scenario } from '../../simulator/scenarios.js';
import { startE2ePlatform, type E2ePlatform } from '../helpers/e2e.js';
import { runCli } from '../helpers/cli.js';
import { waitFor } from '../workers/receiver.js';

/**
 * Trips end to end: every stored route driven by the simulator over MQTT into the real gateway yields
 * exactly one completed trip with the route's distance, duration, ends and shape, and a report card; the
 * hard-brake, gps-gap and duplicates scenarios, and a drive without ignition frames, read back through the API.
 */
let e: E2ePlatform;
let p: Platform;
let mqttUrl: string;
let routes: StoredRoute[];
const api = (url: string) => e.api('GET', url);
const newDevice = (name: string) => e.newDevice(name);

beforeAll(async () => {
  e = await startE2ePlatform();
  ({ p, mqttUrl } = e);
  routes = await loadStoredRoutes();
});
afterAll(async () => { await e?.close(); });

let vinN = 0;
/** Drives a route with the simulator at 200× and returns the device's trips once one is completed. */
async function run(route: StoredRoute, scenarios: Scenario[] = [], seed = 7) {
  const { device, secret } = await newDevice(route.name);
  const vin = `VV1TR1PS${String(++vinN).padStart(9, '0')}`;
  await startDevice({ mqttUrl, deviceId: device.id, secret, route, vin, speed: 200, intervalMs: 1000, scenarios, seed, runId: `trip-${vinN}` }).done;
  const trips = await waitFor(async () => {
    const { body } = await api(`/api/v1/devices/${device.id}/trips`);
    return body.trips.some((t: any) => t.status === 'completed') ? body.trips : null;
  }, `a completed trip for ${route.name}`, 20_000) as any[];
  return { device, trips };
}

/** Meters between two [lon, lat] points, and from a point to a segment (local equirectangular plane). */
function toPlane(origin: [number, number]) {
  const k = Math.cos((origin[1] * Math.PI) / 180);
  return ([lon, lat]: [number, number]) => [(lon - origin[0]) * 111_320 * k, (lat - origin[1]) * 110_574];
}
function distanceToLine(pt: [number, number], line: [number, number][]): number {
  const xy = toPlane(pt);
  const [px, py] = xy(pt);
  let best = Infinity;
  for (let i = 0; i < line.length; i++) {
    const [ax, ay] = xy(line[i]);
    const [bx, by] = xy(line[Math.min(i + 1, line.length - 1)]);
    const len2 = (bx - ax) ** 2 + (by - ay) ** 2;
    const u = len2 ? Math.max(0, Math.min(1, ((px - ax) * (bx - ax) + (py - ay) * (by - ay)) / len2)) : 0;
    best = Math.min(best, Math.hypot(px - ax - u * (bx - ax), py - ay - u * (by - ay)));
  }
  return best;
}
const meters = (a: [number, number], b: [number, number]) => distanceToLine(a, [b]);

describe('trips end to end', () => {
  it('turns every stored route into exactly one completed trip matching the route, with a report card', async () => {
    const results = await Promise.all(routes.map(async (route) => ({ route, ...(await run(route)) })));
    for (const { route, trips } of results) {
      expect(trips, route.name).toHaveLength(1);
      const [trip] = trips;
      expect(trip.status).toBe('completed');
      expect(Math.abs(trip.stats.distanceByGPS - route.distanceByGPS) / route.distanceByGPS, `${route.name} distance`).toBeLessThan(0.02);
      expect(Math.abs(trip.stats.duration - route.duration) / route.duration, `${route.name} duration`).toBeLessThan(0.05);
      const line = decodePolyline(route.polyline) as [number, number][];
      expect(meters(trip.startPoint.coordinates, line[0]), `${route.name} start`).toBeLessThan(50);
      expect(meters(trip.stopPoint.coordinates, line.at(-1)!), `${route.name} stop`).toBeLessThan(50);
      const preview = polyline.decode(trip.preview).map(([lat, lon]) => [lon, lat] as [number, number]);
      const worst = Math.max(...line.map((pt) => distanceToLine(pt, preview)));
      expect(worst, `${route.name} preview`).toBeLessThan(30);
      const card = await api(`/api/v1/trips/${trip.id}/report_cards/_current`);
      expect(card.status, route.name).toBe(200);
      expect(card.body.reportCard.grade).toMatch(/^[ABCDFI]$/);
    }
  }, 110_000);

  it('counts the hard-brake scenario\'s brakes, keeps one identical trip across a GPS gap and re-sent frames', async () => {
    const route = routes.find((r) => r.name === 'DFW - Downtown Route 1')!;
    const [plain, braking, gap, dup] = await Promise.all([
      run(route), run(route, ['hard-brake']), run(route, ['gps-gap']), run(route, ['duplicates']),
    ]);
    expect(braking.trips[0].stats.hardBrakeCount).toBeGreaterThan(plain.trips[0].stats.hardBrakeCount);
    for (const other of [gap, dup]) {
      expect(other.trips).toHaveLength(1);
      const [a, b] = [plain.trips[0], other.trips[0]];
      expect(b.stats.messageCount).toBe(a.stats.messageCount);
      expect(b.stats.distanceByGPS).toBeCloseTo(a.stats.distanceByGPS, 1);
      expect(b.stats.duration).toBe(a.stats.duration);
    }
    const events = (await api(`/api/v1/devices/${dup.device.id}/events?type=trip-completed`)).body.events;
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ object: { type: 'trip', id: dup.trips[0].id }, meta: { vehicleId: dup.trips[0].vehicleId } });
  }, 60_000);

  it('makes exactly one trip of a drive without ignition frames, closed after the stationary period', async () => {
    const { device, secret } = await newDevice('no-ignition');
    const client = await connectAsync(mqttUrl, { username: device.id, password: secret, clientId: device.id, reconnectPeriod: 0 });
    const t0 = Date.now() - 900_000;
    const frame = (s: number, speed: number, m: number) => ({
      id: `n${s}`, ts: t0 + s * 1000, location: { lat: Math.round((32.78 + m / 110_900) * 1e6) / 1e6, lon: -96.8, speed }, data: { vehicleSpeed: speed },
    });
    const frames = [];
    for (let s = 0; s <= 300; s += 5) frames.push(frame(s, s === 0 ? 0 : 40, s * 11.1));
    for (let s = 305; s <= 600; s += 5) frames.push(frame(s, 0, 300 * 11.1));
    for (let i = 0; i < frames.length; i += 10) await client.publishAsync(`devices/${device.id}/frames`, JSON.stringify(frames.slice(i, i + 10)), { qos: 1 });
    await client.endAsync();
    const trips = (await api(`/api/v1/devices/${device.id}/trips`)).body.trips;
    expect(trips).toHaveLength(1);
    expect(trips[0]).toMatchObject({ status: 'completed', meta: { startReason: 'motion', endReason: 'stationary' } });
    expect(trips[0].start).toBe(new Date(t0 + 5000).toISOString());
    expect(trips[0].stop).toBe(new Date(t0 + 305_000).toISOString());
  }, 30_000);

  it('shows the run\'s trip at the end of `runs start --wait`, and in `trips list` and `trips show`', async () => {
    const createDummy = async (name: string) => (await (await fetch(`${p.apiUrl}/api/v1/dummies`, {
      method: 'POST', body: JSON.stringify({ dummy: { name } }), headers: { authorization: e.auth, 'content-type': 'application/json' },
    })).json()).dummy;
    await createDummy('trip cli');
    const other = await createDummy('trip cli 2'); // a dummy's passes never overlap in time: a second run would wait
    const cli = (...args: string[]) => runCli([...args, '--data-dir', e.dataDir], {}, 60_000);
    const route = routes.find((r) => r.name === 'DFW - Circle the Block')!;
    const [run, human] = await Promise.all([
      cli('runs', 'start', '--dummy', 'trip cli', '--route', route.name, '--speed', '100', '--wait', '--json'),
      cli('runs', 'start', '--dummy', other.id, '--route', route.name, '--speed', '100', '--wait'),
    ]);
    expect(run.code, run.stderr).toBe(0);
    const { trip } = JSON.parse(run.stdout);
    expect(trip).toMatchObject({ status: 'completed', grade: expect.stringMatching(/^[ABCDFI]$/) });
    expect(Math.abs(trip.distance - route.distanceByGPS) / route.distanceByGPS).toBeLessThan(0.02);
    expect(human.stdout).toMatch(/^Trip [0-9a-f-]{36} \(completed\): 0\.\d\d km, 2 min \d+ s, grade [ABCDFI]$/m);
    const list = JSON.parse((await cli('trips', 'list', '--dummy', 'trip cli', '--json')).stdout);
    expect(list.map((t: any) => t.id)).toContain(trip.id);
    expect(list).toHaveLength(1);
    const show = await cli('trips', 'show', trip.id);
    expect(show.stdout).toContain(`Trip ${trip.id} (completed)`);
    expect(show.stdout).toMatch(/from: .* \(startup\)\n {2}to: .* \(shutdown\)/);
  }, 90_000);
});
