import { connectAsync } from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadStoredRoutes } from '../../simulator/route.js';
import { startDevice } from '../../simulator/device.js';
import { buildRunFrames } from '../../simulator/frames.js';
import { startE2ePlatform, type E2ePlatform } from '../helpers/e2e.js';
import { waitFor, type Receiver } from '../workers/receiver.js';

/**
 * Diagnostics and collisions end to end: the simulator's dtc, weak-battery and collision scenarios and hand-written frames go
 * over MQTT into the real gateway; occurrences, battery status and collisions are read back through the API,
 * and the dtc-on, dtc-off and collision events reach a real HTTP receiver through subscriptions.
 */
let e: E2ePlatform;
let receiver: Receiver;
let mqttUrl: string;
const api = (method: string, url: string, body?: unknown) => e.api(method, url, body);

beforeAll(async () => {
  e = await startE2ePlatform({ receiver: true });
  ({ mqttUrl } = e);
  receiver = e.receiver!;
});
afterAll(async () => { await e?.close(); });

async function newDevice(name: string) {
  const { device, secret } = await e.newDevice(name);
  for (const type of ['dtc-on', 'dtc-off', 'collision']) {
    const res = await api('POST', `/api/v1/devices/${device.id}/subscriptions`, { subscription: { eventType: type, url: `${receiver.base}/ok/${name}/${type}` } });
    expect(res.status).toBe(201);
  }
  return { device, secret };
}

/** The events POSTed to the receiver for a device's subscription, oldest first. */
const delivered = (name: string, type: string) => receiver.on(`/ok/${name}/${type}`).map((r) => JSON.parse(r.body).notification.event)
  .sort((a: any, b: any) => a.timestamp.localeCompare(b.timestamp));
/** Waits until exactly `n` events of the type reached the receiver. */
const waitDelivered = (name: string, type: string, n: number) => waitFor(() => {
  const list = delivered(name, type);
  return list.length === n ? list : null;
}, `${n} ${type} deliveries to ${name}`, 20_000) as Promise<any[]>;
const numberOf = async (codeId: string) => (await api('GET', `/api/v1/codes/${codeId}`)).body.code.number;

describe('diagnostics and collisions, end to end', () => {
  it('turns the simulator\'s dtc, weak-battery and collision scenarios into an occurrence, a red battery and one collision, with events delivered', async () => {
    const { device, secret } = await newDevice('sim');
    const route = (await loadStoredRoutes()).find((r) => r.name === 'DFW - Back Home')!;
    const opts = { vin: 'VV1DTC5SC3NAR1001', scenarios: ['dtc', 'weak-battery', 'collision'] as const, seed: 12, runId: 'e2e-diag' };
    const summary = await startDevice({ mqttUrl, deviceId: device.id, secret, route, speed: 40, ...opts }).done;
    expect(summary.framesSent).toBeGreaterThan(25);
    const vehicleId = (await api('GET', `/api/v1/devices/${device.id}/vehicles/_latest`)).body.vehicle.id;

    const frames = buildRunFrames(route, { ...opts, scenarios: [...opts.scenarios] }).map((f) => f.frame);
    const codes = (await api('GET', `/api/v1/vehicles/${vehicleId}/codes`)).body.codes;
    expect(codes).toHaveLength(1);
    expect(codes[0]).toMatchObject({ number: 'P0300', description: 'Random/Multiple Cylinder Misfire Detected', deviceId: device.id, vehicleId });
    const [firstOn, firstOff] = [frames.findIndex((f) => f.dtcs?.length), frames.findIndex((f) => f.dtcs && !f.dtcs.length)];
    expect(Date.parse(codes[0].stop) - Date.parse(codes[0].start)).toBe(frames[firstOff].ts - frames[firstOn].ts);

    const battery = (await api('GET', `/api/v1/vehicles/${vehicleId}/battery_statuses/_current`)).body.batteryStatus;
    expect(battery.status).toBe('red'); // weak battery: ~12.0 V at rest, ~5.5 V cranking

    const collisions = (await api('GET', `/api/v1/vehicles/${vehicleId}/collisions`)).body.collisions;
    const hit = frames.find((f) => f.collision)!;
    expect(collisions).toHaveLength(1);
    expect(collisions[0].location).toEqual({ latitude: hit.location.lat, longitude: hit.location.lon });

    const on = await waitDelivered('sim', 'dtc-on', 1);
    const off = await waitDelivered('sim', 'dtc-off', 1);
    const crash = await waitDelivered('sim', 'collision', 1);
    expect(on[0]).toMatchObject({ deviceId: device.id, timestamp: codes[0].start, object: { type: 'vehicle', id: vehicleId } });
    expect(off[0]).toMatchObject({ timestamp: codes[0].stop, meta: { code: on[0].meta.code } });
    expect(await numberOf(on[0].meta.code)).toBe('P0300');
    expect(crash[0]).toMatchObject({ eventType: 'collision', timestamp: collisions[0].timestamp, object: { type: 'vehicle', id: vehicleId } });
  }, 60_000);

  it('follows hand-written frames: P0301 on then off while U0100 stays on, 11.6 V rest / 9.1 V crank, one 4 g impact at 50 km/h', async () => {
    const { device, secret } = await newDevice('hand');
    const client = await connectAsync(mqttUrl, { username: device.id, password: secret, clientId: device.id, reconnectPeriod: 0 });
    const t0 = Date.now() - 120_000;
    const G = 9.80665;
    const frame = (s: number, extra: Record<string, unknown> = {}, accelX = 0.3) => ({
      id: `h${s}`, ts: t0 + s * 1000, location: { lat: Math.round((32.78 + s / 10_000) * 1e6) / 1e6, lon: -96.8, speed: 50 }, data: { vehicleSpeed: 50, rpm: 2000 },
      accel: { maxX: Math.max(accelX, 0.1), minX: Math.min(accelX, -0.1), maxY: 0.2, minY: -0.2, maxZ: G + 0.2, minZ: G - 0.2 }, ...extra,
    });
    const send = (frames: unknown[]) => client.publishAsync(`devices/${device.id}/frames`, JSON.stringify(frames), { qos: 1 });
    await send([{ id: 'start', ts: t0, kind: 'startup', vin: 'VV1HANDWR1TTEN001', battery: { voltage: 11.6, crankingVoltage: 9.1 }, data: { rpm: 700 } }]);
    await send([frame(5, { dtcs: ['P0301', 'U0100'] }), frame(10)]);
    await send([frame(15, { dtcs: ['U0100'] }), frame(20, {}, -4 * G), frame(25, { dtcs: ['U0100'] })]);
    await client.endAsync();

    const vehicleId = (await api('GET', `/api/v1/devices/${device.id}/vehicles/_latest`)).body.vehicle.id;
    const iso = (s: number) => new Date(t0 + s * 1000).toISOString();
    const codes = (await api('GET', `/api/v1/vehicles/${vehicleId}/codes?state=all`)).body.codes.map((c: any) => [c.number, c.start, c.stop]).sort();
    expect(codes).toEqual([['P0301', iso(5), iso(15)], ['U0100', iso(5), null]]);
    expect((await api('GET', `/api/v1/vehicles/${vehicleId}/codes?state=active`)).body.codes.map((c: any) => c.number)).toEqual(['U0100']);
    expect((await api('GET', `/api/v1/vehicles/${vehicleId}/codes?state=open`)).status).toBe(400);
    expect((await api('GET', `/api/v1/vehicles/${vehicleId}/battery_statuses/_current`)).body.batteryStatus).toEqual({ status: 'red', timestamp: iso(0) });
    const collisions = (await api('GET', `/api/v1/devices/${device.id}/collisions`)).body.collisions;
    expect(collisions.map((c: any) => [c.timestamp, c.location])).toEqual([[iso(20), { latitude: 32.782, longitude: -96.8 }]]);

    const on = await waitDelivered('hand', 'dtc-on', 2);
    expect((await Promise.all(on.map((e: any) => numberOf(e.meta.code)))).sort()).toEqual(['P0301', 'U0100']);
    const off = await waitDelivered('hand', 'dtc-off', 1);
    expect([off[0].timestamp, await numberOf(off[0].meta.code)]).toEqual([iso(15), 'P0301']);
    const crash = await waitDelivered('hand', 'collision', 1);
    expect(crash[0]).toMatchObject({ timestamp: iso(20), deviceId: device.id, object: { type: 'vehicle', id: vehicleId } });
    await new Promise((r) => setTimeout(r, 300));
    expect(delivered('hand', 'collision')).toHaveLength(1);
  }, 60_000);
});
