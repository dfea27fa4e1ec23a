import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { metersNorth } from '../db/rules.fixtures.js';

let g: TestGateway;
beforeAll(async () => { g = await startTestGateway(); });
afterAll(async () => { await g?.close(); });

const LON = 4.8952;
const LAT = 52.3702;
const T0 = Date.now() - 120_000;

async function setup() {
  const app = await g.t.make.application();
  const device = await g.t.make.device(app.principal);
  const post = (rule: unknown) => g.t.app.inject({
    method: 'POST', url: `/api/v1/devices/${device.id}/rules`, headers: { authorization: app.auth }, payload: { rule },
  });
  const client = await g.connect(device);
  /** QoS 1: resolves after the batch (messages, rule evaluation, events) committed. */
  const publish = (frames: unknown[]) => client.publishAsync(`devices/${device.id}/frames`, JSON.stringify(frames), { qos: 1 });
  const trail = async (ruleId: string) => {
    const res = await g.t.app.inject({
      method: 'GET', url: `/api/v1/devices/${device.id}/events?type=rule-*&objectId=${ruleId}`, headers: { authorization: app.auth },
    });
    return res.json().events.reverse().map((e: any) => [e.eventType, e.meta.firstEval, e.timestamp]);
  };
  return { app, device, post, publish, trail };
}

const iso = (s: number) => new Date(T0 + s * 1000).toISOString();
const frame = (s: number, metersFromCenter: number | null, data?: Record<string, number>) => ({
  id: `f${s}`, ts: T0 + s * 1000,
  ...(metersFromCenter === null ? {} : { location: { lat: metersNorth(LAT, metersFromCenter), lon: LON } }),
  ...(data ? { data } : {}),
});

describe('rules evaluated by the ingest pipeline (frames over MQTT)', () => {
  it('gives enter and leave events for a radius rule and a vehicleSpeed rule as frames arrive', async () => {
    const s = await setup();
    const depot = (await s.post({ name: 'depot', boundaries: [{ type: 'radius', lon: LON, lat: LAT, radius: 50 }] })).json().rule;
    const fast = (await s.post({ name: 'fast', boundaries: [{ type: 'parametric', parameter: 'vehicleSpeed', min: 100, max: null }] })).json().rule;
    await s.publish([frame(0, 10, { vehicleSpeed: 20 }), frame(5, 30, { vehicleSpeed: 110 })]);
    await s.publish([frame(10, 200, { vehicleSpeed: 95 })]);
    expect(await s.trail(depot.id)).toEqual([['rule-enter', true, iso(0)], ['rule-leave', false, iso(10)]]);
    expect(await s.trail(fast.id)).toEqual([['rule-leave', true, iso(0)], ['rule-enter', false, iso(5)], ['rule-leave', false, iso(10)]]);
  });

  it('re-evaluates a late frame where it belongs in time', async () => {
    const s = await setup();
    const depot = (await s.post({ name: 'depot', boundaries: [{ type: 'radius', lon: LON, lat: LAT, radius: 50 }] })).json().rule;
    await s.publish([frame(0, 0), frame(10, 5), frame(20, 500)]);
    await s.publish([frame(15, 400)]);
    expect(await s.trail(depot.id)).toEqual([['rule-enter', true, iso(0)], ['rule-leave', false, iso(15)]]);
    const res = await g.t.app.inject({ method: 'GET', url: `/api/v1/rules/${depot.id}`, headers: { authorization: s.app.auth } });
    expect(res.json().rule).toMatchObject({ evaluated: true, covered: false });
  });
});
