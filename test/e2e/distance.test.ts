import { connectAsync } from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadStoredRoutes } from '../../simulator/route.js';
import { startDevice } from '../../simulator/device.js';
import { buildRunFrames } from '../../simulator/frames.js';
import { startE2ePlatform, type E2ePlatform } from '../helpers/e2e.js';
import { waitFor, type Receiver } from '../workers/receiver.js';

/**
 * Distance end to end: two simulator runs of "DFW - Circle the Block" (588.761 m by GPS) into the real
 * gateway; the odometer estimate read back through the API, and the distance-trigger events of a specific, a
 * from_now and a milestone trigger delivered to a real HTTP receiver through a subscription, each exactly as
 * specified. Run 1 is the simulator's frames published with a start time 10 minutes ago; run 2 is the simulator's
 * device client at speed 40, whose time-compressed frames are stamped in the last 2.3 minutes, after run 1's.
 */
let e: E2ePlatform;
let receiver: Receiver;
let mqttUrl: string;
const api = (method: string, url: string, body?: unknown, headers: Record<string, string> = {}) => e.api(method, url, body, headers);

beforeAll(async () => {
  e = await startE2ePlatform({ receiver: true });
  mqttUrl = e.mqttUrl;
  receiver = e.receiver!;
});
afterAll(async () => { await e?.close(); });

const VIN = 'VV1DSTNCE0TR1GGER';
const delivered = (type: string) => receiver.on(`/ok/${type}`).map((r) => JSON.parse(r.body).notification.event);
const firings = (triggerId: string) => delivered('distance-trigger').filter((e: any) => e.object.id === triggerId)
  .sort((a: any, b: any) => a.meta.odometerTrigger.events - b.meta.odometerTrigger.events);
const waitFirings = (triggerId: string, n: number) => waitFor(() => (firings(triggerId).length === n ? firings(triggerId) : null),
  `${n} firings of ${triggerId}`, 20_000) as Promise<any[]>;

describe('distance and odometer triggers, end to end', () => {
  it('estimates two runs within 2% and fires specific once, from_now once and milestone at every multiple', async () => {
    const { device, secret } = await e.newDevice('dist');
    expect((await api('POST', `/api/v1/devices/${device.id}/subscriptions`,
      { subscription: { eventType: 'distance-trigger', url: `${receiver.base}/ok/distance-trigger` } })).status).toBe(201);

    // The vehicle first (a startup frame 20 minutes ago), then a reading of 1 000 km 15 minutes ago and the triggers.
    const now = Date.now();
    const client = await connectAsync(mqttUrl, { username: device.id, password: secret, clientId: device.id, reconnectPeriod: 0 });
    const publish = (frames: unknown[]) => client.publishAsync(`devices/${device.id}/frames`, JSON.stringify(frames), { qos: 1 });
    await publish([{ id: 'hello', ts: now - 1_200_000, kind: 'startup', vin: VIN, data: { rpm: 700 } }]);
    const vehicleId = (await api('GET', `/api/v1/devices/${device.id}/vehicles/_latest`)).body.vehicle.id;
    const reading = await api('POST', `/api/v1/vehicles/${vehicleId}/odometers`,
      { odometer: { reading: 1000, unit: 'km', date: new Date(now - 900_000).toISOString() } });
    expect(reading.status).toBe(200);
    const trigger = async (type: string, threshold: number, unit: string) =>
      (await api('POST', `/api/v1/vehicles/${vehicleId}/odometer_triggers`, { odometerTrigger: { type, threshold, unit } })).body.odometerTrigger;
    const specific = await trigger('specific', 1000.8, 'km'); // reached in run 2 (≈ 1 000.59 km after run 1)
    const fromNow = await trigger('from_now', 400, 'm'); // reached in run 1
    const milestone = await trigger('milestone', 250, 'm'); // 1 000 250, 1 000 500 in run 1; 1 000 750, 1 001 000 in run 2
    expect([specific.threshold, fromNow.threshold, milestone.threshold]).toEqual([1_000_800, 400, 250]);

    const route = (await loadStoredRoutes()).find((r) => r.name === 'DFW - Circle the Block')!;
    const run1 = buildRunFrames(route, { vin: VIN, startTime: new Date(now - 600_000), seed: 1, runId: 'dist-1' }).map((f) => f.frame);
    for (let i = 0; i < run1.length; i += 20) await publish(run1.slice(i, i + 20));
    await client.endAsync();
    const latest = async () => (await api('GET', `/api/v1/vehicles/${vehicleId}/distances/_latest`)).body.distance;
    const afterRun1 = await latest();
    expect(afterRun1).toMatchObject({ basis: 'odometer', lastOdometerDate: new Date(now - 900_000).toISOString() });
    expect(Math.abs(afterRun1.value - 1_000_000 - 588.761) / 588.761).toBeLessThan(0.02);

    expect((await waitFirings(fromNow.id, 1))[0].meta).toMatchObject({ odometerTrigger: { id: fromNow.id, type: 'from_now', events: 1 } });
    const m1 = await waitFirings(milestone.id, 2);
    expect(m1.map((e) => e.meta.odometerTrigger.events)).toEqual([1, 2]);
    expect(m1.map((e) => Math.floor(e.meta.estimatedOdometer / 250) * 250)).toEqual([1_000_250, 1_000_500]);
    expect(firings(specific.id)).toEqual([]);

    const summary = await startDevice({ mqttUrl, deviceId: device.id, secret, route, vin: VIN, speed: 40, seed: 2, runId: 'dist-2' }).done;
    expect(summary.framesSent).toBeGreaterThan(30);
    const afterRun2 = await latest();
    expect(Math.abs(afterRun2.value - 1_000_000 - 2 * 588.761) / (2 * 588.761)).toBeLessThan(0.02);
    expect(afterRun2.confidenceMax - afterRun2.confidenceMin).toBeGreaterThan(afterRun1.confidenceMax - afterRun1.confidenceMin);
    const km = (await api('GET', `/api/v1/vehicles/${vehicleId}/distances/_latest`, undefined, { 'x-service-unit': 'km' })).body.distance;
    expect(km.value).toBeCloseTo(afterRun2.value / 1000, 4);

    const s = await waitFirings(specific.id, 1);
    expect(s[0]).toMatchObject({ eventType: 'distance-trigger', deviceId: device.id, object: { id: specific.id, type: 'odometer-trigger' } });
    expect(s[0].meta.estimatedOdometer).toBeGreaterThanOrEqual(1_000_800);
    expect(s[0].meta.estimatedOdometer).toBeLessThan(1_000_850);
    const m2 = await waitFirings(milestone.id, 4);
    expect(m2.map((e) => Math.floor(e.meta.estimatedOdometer / 250) * 250)).toEqual([1_000_250, 1_000_500, 1_000_750, 1_001_000]);
    await new Promise((r) => setTimeout(r, 300));
    expect(firings(fromNow.id)).toHaveLength(1);
    const counts = await Promise.all([specific, fromNow, milestone].map(async (x) =>
      (await api('GET', `/api/v1/odometer_triggers/${x.id}`)).body.odometerTrigger.events));
    expect(counts).toEqual([1, 1, 4]);
    const stored = (await api('GET', `/api/v1/devices/${device.id}/events?type=distance-trigger&limit=100`)).body.events;
    expect(stored).toHaveLength(6);
  }, 90_000);

  it('measures the same distance when the frames of a GPS gap arrive late and frames are re-sent as when all arrive in order', async () => {
    const route = (await loadStoredRoutes()).find((r) => r.name === 'DFW - Circle the Block')!;
    const drive = async (name: string, vin: string, scenarios: ('gps-gap' | 'duplicates')[]) => {
      const { device, secret } = await e.newDevice(name);
      await startDevice({ mqttUrl, deviceId: device.id, secret, route, vin, speed: 40, seed: 7, runId: name, scenarios }).done;
      const vehicleId = (await api('GET', `/api/v1/devices/${device.id}/vehicles/_latest`)).body.vehicle.id;
      return (await api('GET', `/api/v1/vehicles/${vehicleId}/distances/_latest`)).body.distance;
    };
    const [plain, late] = await Promise.all([drive('plain', 'VV1DSTNCE0PLA1N01', []), drive('late', 'VV1DSTNCE0LATE001', ['gps-gap', 'duplicates'])]);
    expect(plain).toMatchObject({ basis: 'observed', lastOdometerDate: null });
    expect(Math.abs(plain.value - 588.761) / 588.761).toBeLessThan(0.02);
    expect(late.value).toBeCloseTo(plain.value, 2); // the same frames, re-measured where late ones split a step (584.39 m both)
  }, 60_000);
});
