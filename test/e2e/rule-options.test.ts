// Rule options end to end (docs/reference/rest-api.md, rules): the whole platform in process, devices driving
// stored routes over real MQTT with the simulator (test routes from test/fixtures/routes/, built by its
// build-routes.ts), raw frames from a real MQTT client where a device must report more sparsely than the simulator
// can, and rules created with the real `drivewire rules create` binary as well as through the API.
import { fileURLToPath } from 'node:url';
import mqtt from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeRoute, loadStoredRoutes, type StoredRoute } from '../../simulator/route.js';
import { startDevice } from '../../simulator/device.js';
import { startE2ePlatform, type E2ePlatform } from '../helpers/e2e.js';
import { runCli } from '../helpers/cli.js';
import { waitFor } from '../workers/receiver.js';

const FIXTURES = fileURLToPath(new URL('../fixtures/routes/', import.meta.url));
const stored = await loadStoredRoutes();
const fixtures = await loadStoredRoutes(FIXTURES);
const byName = (routes: StoredRoute[], name: string) => routes.find((r) => r.name === name)!;
const ROUTE_1 = byName(stored, 'DFW - Downtown Route 1');
const EDGE = byName(fixtures, 'Test - Fence Edge');
const THEN_AWAY = byName(fixtures, 'Test - Downtown Route 1 Then Away');
/** The circle the edge route weaves across (test/fixtures/routes/build-routes.ts). */
const FENCE = { lon: -96.8, lat: 32.8, radius: 150 };
const VIN = 'VV4E2E5RUL0000001';

let e: E2ePlatform;
beforeAll(async () => { e = await startE2ePlatform(); });
afterAll(async () => { await e?.close(); });

// Generous timeout: each binary start costs seconds of CPU, and the machine may be shared.
const cli = (args: string[]) => runCli([...args, '--data-dir', e.dataDir, '--api-url', e.p.apiUrl], {}, 110_000);

interface RuleEvent { eventType: string; timestamp: string; meta: { firstEval?: boolean; dwellSeconds?: number; crossing?: any; message?: any } }

/** The rule's events, oldest first. */
async function eventsOf(deviceId: string, ruleId: string): Promise<RuleEvent[]> {
  const res = await e.api('GET', `/api/v1/devices/${deviceId}/events?type=rule-*&objectId=${ruleId}&limit=100`);
  expect(res.status).toBe(200);
  return (res.body.events as RuleEvent[]).sort((a, b) => Date.parse(a.timestamp) - Date.parse(b.timestamp));
}
const kinds = (events: RuleEvent[]) => events.map((ev) => `${ev.eventType.replace('rule-', '')}${ev.meta.firstEval ? ' (first)' : ''}`);

async function createRule(deviceId: string, rule: Record<string, unknown>): Promise<{ id: string }> {
  const res = await e.api('POST', `/api/v1/devices/${deviceId}/rules`, { rule });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.rule;
}

/** The device's stored messages with a location, oldest first. */
async function positions(deviceId: string): Promise<{ timestamp: number; lon: number; lat: number; speed: number | undefined }[]> {
  const out: { timestamp: number; lon: number; lat: number; speed: number | undefined }[] = [];
  let url: string | undefined = `/api/v1/devices/${deviceId}/messages?limit=100`;
  while (url) {
    const page = await e.api('GET', url);
    for (const m of page.body.messages) {
      const [lon, lat] = m.data?.location?.coordinates ?? [];
      if (lon !== undefined) out.push({ timestamp: Date.parse(m.timestamp), lon, lat, speed: m.data.vehicleSpeed });
    }
    url = page.body.meta.pagination.links.prior;
  }
  return out.reverse();
}

/** Drives `route` on the device over MQTT at 40× and resolves once the platform has stored its last frame. */
async function drive(device: { device: { id: string }; secret: string }, route: StoredRoute, seed = 1): Promise<void> {
  const run = startDevice({ mqttUrl: e.mqttUrl, deviceId: device.device.id, secret: device.secret, route, vin: VIN, speed: 40, seed });
  const summary = await run.done;
  expect(summary.stopped).toBe(false);
  await waitFor(async () => {
    const newest = (await e.api('GET', `/api/v1/devices/${device.device.id}/messages?limit=1`)).body.messages[0];
    return newest && Date.parse(newest.timestamp) >= summary.lastTs!;
  }, `the last frame of ${route.name} stored`, 30_000);
}

/** Great-circle meters (haversine). */
function meters(a: [number, number], b: [number, number]): number {
  const rad = Math.PI / 180;
  const h = Math.sin(((b[1] - a[1]) * rad) / 2) ** 2 + Math.cos(a[1] * rad) * Math.cos(b[1] * rad) * Math.sin(((b[0] - a[0]) * rad) / 2) ** 2;
  return 2 * 6_371_008.8 * Math.asin(Math.sqrt(h));
}

/** Runs of consecutive samples with `inside` the same, as [inside, first timestamp, last timestamp]. */
function stretches<T extends { timestamp: number }>(samples: T[], inside: (s: T) => boolean): [boolean, number, number][] {
  const out: [boolean, number, number][] = [];
  for (const s of samples) {
    const last = out.at(-1);
    if (last && last[0] === inside(s)) last[2] = s.timestamp;
    else out.push([inside(s), s.timestamp, s.timestamp]);
  }
  return out;
}

describe('drivewire rules create|list|delete', () => {
  it('refuses bad option values with a message naming the option, and shows the API\'s 400 as it is', async () => {
    const { device } = await e.newDevice('cli-bad-options');
    const [radius, width, hours, api400] = await Promise.all([
      cli(['rules', 'create', device.id, '--name', 'r', '--radius', '-96.8,32.8']),
      cli(['rules', 'create', device.id, '--name', 'r', '--radius', '-96.8,32.8,100', '--width', '50']),
      cli(['rules', 'create', device.id, '--name', 'r', '--parameter', 'rpm', '--max', '3000', '--active-hours', 'mon-fri 8:00-18:00', '--time-zone', 'Europe/Berlin']),
      cli(['rules', 'create', device.id, '--name', 'r', '--corridor', '[[-96.8,32.8],[-96.79,32.8]]', '--width', '0']),
    ]);
    expect(radius).toMatchObject({ code: 1, stdout: '' });
    expect(radius.stderr).toContain('--radius must be lon,lat,meters (three numbers, e.g. -96.8,32.78,500), got "-96.8,32.8"');
    expect(width.stderr).toContain('--width is the width of a corridor: give --corridor or --corridor-route with it');
    expect(hours.stderr).toContain('--active-hours must be windows like "mon-fri 08:00-18:00,sat 09:00-13:00" (days mon..sun, times HH:MM), got "mon-fri 8:00-18:00"');
    expect(api400.code).toBe(1);
    expect(api400.stderr).toMatch(/rule\.boundaries\[0\] \(corridor\): widthMeters/);
    expect((await e.api('GET', `/api/v1/devices/${device.id}/rules`)).body.rules).toEqual([]);
  });

  it('creates a rule with every option, lists it and deletes it', async () => {
    const { device } = await e.newDevice('cli-every-option');
    const created = await cli(['rules', 'create', device.id, '--name', 'depot, weekdays', '--radius', '-96.8,32.8,150', '--buffer', '20',
      '--parameter', 'vehicleSpeed', '--max', '60', '--deadband', '5', '--min-inside', '20', '--min-outside', '10', '--crossings',
      '--active-hours', 'mon-fri 08:00-18:00,sat 09:00-13:00', '--time-zone', 'America/Chicago', '--json']);
    expect(created.stderr).toBe('');
    expect(created.code).toBe(0);
    const rule = JSON.parse(created.stdout);
    expect(rule).toMatchObject({
      name: 'depot, weekdays', deviceId: device.id, minInsideSeconds: 20, minOutsideSeconds: 10, detectCrossings: true,
      activeHours: { timeZone: 'America/Chicago', windows: [
        { days: ['mon', 'tue', 'wed', 'thu', 'fri'], from: '08:00', until: '18:00' }, { days: ['sat'], from: '09:00', until: '13:00' }] },
    });
    expect(rule.boundaries).toMatchObject([
      { type: 'radius', lon: -96.8, lat: 32.8, radius: 150, bufferMeters: 20 },
      { type: 'parametric', parameter: 'vehicleSpeed', min: null, max: 60, deadband: 5 },
    ]);
    expect((await e.api('GET', `/api/v1/rules/${rule.id}`)).body.rule).toEqual(rule);

    const listed = await cli(['rules', 'list', device.id]);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain(rule.id);
    expect(listed.stdout).toContain('min inside 20 s, min outside 10 s, crossings detected between fixes, active hours mon,tue,wed,thu,fri 08:00-18:00; sat 09:00-13:00 (America/Chicago)');

    const deleted = await cli(['rules', 'delete', rule.id]);
    expect(deleted).toMatchObject({ code: 0, stdout: `Deleted rule ${rule.id}\n` });
    expect((await e.api('GET', `/api/v1/rules/${rule.id}`)).status).toBe(404);
  });
});

describe('rule options on real drives', () => {
  it('a drive weaving across a fence\'s edge gives ≥ 6 events in under a minute without dwell, one enter and one leave with minInsideSeconds 20', async () => {
    const device = await e.newDevice('edge');
    const radius = { type: 'radius', lon: FENCE.lon, lat: FENCE.lat, radius: FENCE.radius };
    const plain = await createRule(device.device.id, { name: 'edge', boundaries: [radius] });
    const dwell = await createRule(device.device.id, { name: 'edge, 20 s dwell', boundaries: [radius], minInsideSeconds: 20 });
    await drive(device, EDGE);

    // The drive as stored: short stints inside (≤ 10 s) and one of ≥ 30 s.
    const inside = stretches(await positions(device.device.id), (s) => meters([s.lon, s.lat], [FENCE.lon, FENCE.lat]) <= FENCE.radius)
      .filter(([isIn]) => isIn).map(([, from, until]) => (until - from) / 1000);
    expect(inside.filter((s) => s >= 30)).toHaveLength(1);
    expect(inside.filter((s) => s < 30).every((s) => s <= 10)).toBe(true);
    expect(inside.length).toBeGreaterThanOrEqual(7);

    const all = await eventsOf(device.device.id, plain.id);
    expect(kinds(all)[0]).toBe('leave (first)');
    const crossings = all.slice(1);
    expect(crossings).toHaveLength(inside.length * 2);
    expect(kinds(crossings)).toEqual(inside.flatMap(() => ['enter', 'leave']));
    expect(Date.parse(crossings[5].timestamp) - Date.parse(crossings[0].timestamp)).toBeLessThan(60_000);

    const dwelt = await eventsOf(device.device.id, dwell.id);
    expect(kinds(dwelt)).toEqual(['leave (first)', 'enter', 'leave']);
    expect(dwelt[1].meta.dwellSeconds).toBe(20);
    // the enter is stamped when the device crossed into the fence for the long stretch, the leave when it left it
    const longEnter = crossings.findIndex((ev, i) => ev.eventType === 'rule-enter'
      && Date.parse(crossings[i + 1].timestamp) - Date.parse(ev.timestamp) >= 30_000);
    expect(dwelt[1].timestamp).toBe(crossings[longEnter].timestamp);
    expect(dwelt[2].timestamp).toBe(crossings[longEnter + 1].timestamp);
  });

  it('a vehicleSpeed rule with a deadband gives one leave and enter per real overspeed of Downtown Route 1; without, it flaps', async () => {
    const device = await e.newDevice('overspeed');
    // Downtown Route 1 with seed 42 cruises 37-45 km/h with six overspeeds peaking at 49-50 km/h; 44 km/h with a
    // deadband of 3 counts a speed above 47 as over and one back at 44 or below as within again.
    const speed = (deadband?: number) => ({ type: 'parametric', parameter: 'vehicleSpeed', min: null, max: 44, ...(deadband !== undefined && { deadband }) });
    const banded = await createRule(device.device.id, { name: 'within 44 km/h, deadband 3', boundaries: [speed(3)] });
    const bare = await createRule(device.device.id, { name: 'within 44 km/h', boundaries: [speed()] });
    await drive(device, ROUTE_1, 42);

    // The real overspeeds: stretches above 47 km/h, told apart by a return to 44 km/h or below between them.
    const samples = (await positions(device.device.id)).filter((s) => s.speed !== undefined);
    const over = stretches(samples.filter((s) => s.speed! > 47 || s.speed! <= 44), (s) => s.speed! > 47).filter(([o]) => o);
    expect(over).toHaveLength(6);
    const banding = await eventsOf(device.device.id, banded.id);
    expect(kinds(banding)).toEqual(['enter (first)', ...over.flatMap(() => ['leave', 'enter'])]);
    // each leave at the first sample above 47 km/h of its overspeed
    expect(banding.filter((ev) => ev.eventType === 'rule-leave').map((ev) => Date.parse(ev.timestamp))).toEqual(over.map(([, from]) => from));

    const flapping = await eventsOf(device.device.id, bare.id);
    const flaps = stretches(samples, (s) => s.speed! > 44).filter(([o]) => o).length;
    expect(flaps).toBe(11);
    expect(kinds(flapping)).toEqual(['enter (first)', ...Array.from({ length: flaps }, () => ['leave', 'enter']).flat()]);
  });

  it('a device reporting every 45 s whose segment passes through a 100 m fence gives enter and leave with detectCrossings, none without', async () => {
    const { device, secret } = await e.newDevice('sparse');
    const center = { lon: -96.75, lat: 32.85 };
    // 0.0032° of longitude ≈ 300 m at this latitude: fixes 300 m west and 300 m east of the center, 45 s apart
    const west = { lon: center.lon - 0.0032, lat: center.lat };
    const east = { lon: center.lon + 0.0032, lat: center.lat };
    expect(meters([west.lon, west.lat], [center.lon, center.lat])).toBeGreaterThan(295);
    const created = await cli(['rules', 'create', device.id, '--name', 'pass-through, crossings', '--radius', `${center.lon},${center.lat},100`, '--crossings', '--json']);
    expect(created.stderr).toBe('');
    const crossing = JSON.parse(created.stdout);
    expect(crossing).toMatchObject({ detectCrossings: true, boundaries: [{ type: 'radius', radius: 100 }] });
    const plain = await createRule(device.id, { name: 'pass-through', boundaries: [{ type: 'radius', ...center, radius: 100 }] });

    const t0 = Date.now() - 120_000;
    const frames = [west, east, { lon: east.lon + 0.0032, lat: east.lat }].map((p, i) => ({
      id: `sparse-${i}`, ts: new Date(t0 + i * 45_000).toISOString(), location: { ...p, speed: 48, heading: 90 }, pids: { '0D': '30' },
    }));
    const client = await mqtt.connectAsync(e.mqttUrl, { clientId: device.id, username: device.id, password: secret });
    try {
      for (const f of frames) await client.publishAsync(`devices/${device.id}/frames`, JSON.stringify(f), { qos: 1 });
    } finally {
      await client.endAsync();
    }
    await waitFor(async () => (await positions(device.id)).length === 3, 'the three fixes stored', 30_000);

    expect(kinds(await eventsOf(device.id, plain.id))).toEqual(['leave (first)']);
    const events = await eventsOf(device.id, crossing.id);
    expect(kinds(events)).toEqual(['leave (first)', 'enter', 'leave']);
    // 200 m of 600 m in 45 s: in 15 s after the west fix, out 30 s after it (± the fence's curvature and rounding)
    const [, enter, leave] = events;
    expect(Math.abs(Date.parse(enter.timestamp) - (t0 + 15_000))).toBeLessThan(1500);
    expect(Math.abs(Date.parse(leave.timestamp) - (t0 + 30_000))).toBeLessThan(1500);
    for (const ev of [enter, leave]) {
      expect(ev.meta.crossing).toMatchObject({ interpolated: true, from: { timestamp: frames[0].ts }, to: { timestamp: frames[1].ts } });
    }
  });

  it('a 50 m corridor along Downtown Route 1: a drive of that route never leaves it, one that parts from it leaves once, where it parts', async () => {
    const on = await e.newDevice('corridor-on');
    const off = await e.newDevice('corridor-off');
    const created = await Promise.all([on, off].map((d) => cli(['rules', 'create', d.device.id, '--name', 'on route 1',
      '--corridor-route', 'DFW - Downtown Route 1', '--width', '50', '--json'])));
    for (const c of created) expect(c.stderr).toBe('');
    const [onRule, offRule] = created.map((c) => JSON.parse(c.stdout));
    expect(onRule.boundaries).toEqual([{ id: expect.any(String), type: 'corridor', coordinates: decodeRoute(ROUTE_1).coordinates, widthMeters: 50 }]);
    await Promise.all([drive(on, ROUTE_1), drive(off, THEN_AWAY)]);

    expect(kinds(await eventsOf(on.device.id, onRule.id))).toEqual(['enter (first)']);
    const offEvents = await eventsOf(off.device.id, offRule.id);
    expect(kinds(offEvents)).toEqual(['enter (first)', 'leave']);
    // the leave is at the first fix more than 50 m from the route, on the leg away from it (the last 500 m)
    const line = decodeRoute(ROUTE_1).coordinates;
    const dense = line.slice(1).flatMap((b, i) => {
      const a = line[i];
      const n = Math.max(1, Math.ceil(meters(a, b) / 2));
      return Array.from({ length: n }, (_, k) => [a[0] + ((b[0] - a[0]) * k) / n, a[1] + ((b[1] - a[1]) * k) / n] as [number, number]);
    });
    const firstOut = (await positions(off.device.id)).find((s) => Math.min(...dense.map((q) => meters([s.lon, s.lat], q))) > 50)!;
    expect(Date.parse(offEvents[1].timestamp)).toBe(firstOut.timestamp);
    const partAt = decodeRoute(THEN_AWAY).coordinates.at(-2)!;
    const fromPart = meters([firstOut.lon, firstOut.lat], partAt);
    expect(fromPart).toBeGreaterThan(50);
    expect(fromPart).toBeLessThan(70);
  });
});

// The fixture routes load from their own folder and are not seeded: GET /routes lists routes-data/ only.
it('keeps the test routes out of the stored routes', () => {
  const ids = stored.map((r) => r.id);
  expect(fixtures.map((r) => r.id).filter((id) => ids.includes(id))).toEqual([]);
});
