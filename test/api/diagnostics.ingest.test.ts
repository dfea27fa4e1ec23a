import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { vehicleOverMqtt } from '../helpers/vehicle-over-mqtt.js';

/** Trouble codes and battery status over a real gateway: hand-written frames over MQTT, read back through the API. */
let g: TestGateway;
beforeAll(async () => { g = await startTestGateway(); });
afterAll(async () => { await g?.close(); });

const T0 = Date.now() - 600_000;
const iso = (s: number) => new Date(T0 + s * 1000).toISOString();
const setup = () => vehicleOverMqtt(g, T0, 'VVDTCS');

describe('trouble codes', () => {
  it('opens an occurrence per new code and closes it when a report no longer holds it, with dtc-on and dtc-off events', async () => {
    const s = await setup();
    await s.publish([{ id: 1, ts: T0, dtcs: ['P0301', 'U0100'] }, { id: 2, ts: T0 + 5000, data: { rpm: 900 } }]);
    await s.publish([{ id: 3, ts: T0 + 10_000, dtcs: '0301C100' }]); // raw mode 03: P0301, U0100 — still on
    await s.publish([{ id: 4, ts: T0 + 20_000, dtcs: ['U0100'] }]);
    expect(await s.codes('active')).toEqual([['U0100', iso(0), null]]);
    expect(await s.codes('inactive')).toEqual([['P0301', iso(0), iso(20)]]);
    expect(await s.codes()).toHaveLength(2);

    const on = await s.events('dtc-on');
    const off = await s.events('dtc-off');
    expect(on.map((e: any) => e.timestamp)).toEqual([iso(0), iso(0)]);
    expect(off).toHaveLength(1);
    expect(off[0]).toMatchObject({ timestamp: iso(20), object: { type: 'vehicle', id: s.vehicleId }, vehicleId: s.vehicleId });
    const code = (await s.get(`/api/v1/codes/${off[0].meta.code}`)).body.code;
    expect(code).toMatchObject({
      id: off[0].meta.code, number: 'P0301', description: 'Cylinder 1 Misfire Detected', make: 'generic',
      system: 'powertrain', subsystem: 'Ignition system or misfire',
    });
    expect(code.links.self).toMatch(new RegExp(`/api/v1/codes/${code.id}$`));
    const list = (await s.get(`/api/v1/vehicles/${s.vehicleId}/codes?state=inactive`)).body.codes[0];
    expect(list).toMatchObject({ deviceId: s.device.id, vehicleId: s.vehicleId, description: 'Cylinder 1 Misfire Detected' });
    expect(list.links.code).toBe(code.links.self);

    await s.publish([{ id: 5, ts: T0 + 30_000, dtcs: [] }]); // an empty list clears every code
    expect(await s.codes('active')).toEqual([]);
    expect((await s.events('dtc-off')).map((e: any) => e.timestamp)).toEqual([iso(20), iso(30)]);
  });

  it('re-derives a late report where it belongs, keeping the events the data still implies', async () => {
    const s = await setup();
    await s.publish([{ id: 1, ts: T0, dtcs: ['P0420'] }, { id: 2, ts: T0 + 20_000, dtcs: ['P0420'] }, { id: 3, ts: T0 + 30_000, dtcs: [] }]);
    const firstOn = (await s.events('dtc-on'))[0];
    await s.publish([{ id: 4, ts: T0 + 10_000, dtcs: [] }]); // late: the code was off between 10 s and 20 s
    expect(await s.codes()).toEqual([['P0420', iso(0), iso(10)], ['P0420', iso(20), iso(30)]]);
    const on = await s.events('dtc-on');
    expect(on.map((e: any) => e.timestamp)).toEqual([iso(0), iso(20)]);
    expect(on[0].id).toBe(firstOn.id);
    expect((await s.events('dtc-off')).map((e: any) => e.timestamp)).toEqual([iso(10), iso(30)]);

    await s.publish([{ id: 5, ts: T0 + 15_000, data: { rpm: 800 } }, { id: 6, ts: T0 + 25_000, dtcs: ['P0420'] }]);
    expect((await s.events('dtc-*')).length).toBe(4); // nothing new: a frame without dtcs says nothing, and 25 s agrees
    await s.publish([{ id: 7, ts: T0 + 5_000, dtcs: ['P0420'] }, { id: 8, ts: T0 + 12_000, dtcs: ['P0420'] }]);
    // The second occurrence now starts at 12 s: its dtc-on at 20 s is no longer implied and is removed.
    expect(await s.codes()).toEqual([['P0420', iso(0), iso(10)], ['P0420', iso(12), iso(30)]]);
    expect((await s.events('dtc-*')).map((e: any) => `${e.eventType} ${e.timestamp}`))
      .toEqual([`dtc-on ${iso(0)}`, `dtc-off ${iso(10)}`, `dtc-on ${iso(12)}`, `dtc-off ${iso(30)}`]);
  });

  it('answers a state outside active, inactive, all with a 400 naming state', async () => {
    const s = await setup();
    for (const bad of ['open', 'ACTIVE', 'x']) {
      const res = await s.get(`/api/v1/vehicles/${s.vehicleId}/codes?state=${bad}`);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ statusCode: 400, error: 'Bad Request' });
      expect(res.body.message).toMatch(/^state must be one of active, inactive, all/);
    }
    expect((await s.get(`/api/v1/codes/00000000-0000-4000-8000-000000000000`)).status).toBe(404);
  });
});

describe('battery status', () => {
  const startup = (id: string, s: number, voltage: number, crankingVoltage: number) =>
    ({ id, ts: T0 + s * 1000, kind: 'startup', battery: { voltage, crankingVoltage }, data: { rpm: 850 } });

  it('turns from green to yellow to red with the resting and cranking voltages of each start', async () => {
    const s = await setup();
    const status = async () => (await s.get(`/api/v1/vehicles/${s.vehicleId}/battery_statuses/_current`)).body;
    expect(await status()).toEqual({ batteryStatus: { status: null, timestamp: null } });
    await s.publish([startup('a', 0, 12.7, 10.4), { id: 'a1', ts: T0 + 5000, data: { rpm: 1500, controlModuleVoltage: 14.1 } }]);
    expect(await status()).toEqual({ batteryStatus: { status: 'green', timestamp: iso(5) } });
    await s.publish([startup('b', 60, 12.2, 10.3)]);
    expect(await status()).toEqual({ batteryStatus: { status: 'yellow', timestamp: iso(60) } });
    await s.publish([startup('c', 120, 11.6, 9.1)]);
    expect(await status()).toEqual({ batteryStatus: { status: 'red', timestamp: iso(120) } });
    await s.publish([startup('late', 90, 12.8, 10.6)]); // a late start does not override the newer readings
    expect((await status()).batteryStatus.status).toBe('red');
  });

  it('reads the cranking dip from the control module voltage of a startup frame and flags a weak charging voltage', async () => {
    const s = await setup();
    const status = async () => (await s.get(`/api/v1/vehicles/${s.vehicleId}/battery_statuses/_current`)).body.batteryStatus;
    await s.publish([{ id: 'r', ts: T0, kind: 'phone-home', data: { controlModuleVoltage: 12.6 } },
      { id: 's', ts: T0 + 1000, kind: 'startup', data: { rpm: 700, controlModuleVoltage: 9.7 } }]);
    expect(await status()).toEqual({ status: 'yellow', timestamp: iso(1) });
    await s.publish([{ id: 't', ts: T0 + 5000, data: { rpm: 2000, controlModuleVoltage: 12.2 } }]);
    expect(await status()).toEqual({ status: 'red', timestamp: iso(5) });
  });

  it('is null when the newest reading is older than the recent window', async () => {
    const s = await setup();
    await s.publish([{ id: 'old', ts: Date.now() - 73 * 3_600_000, kind: 'startup', battery: { voltage: 11.0, crankingVoltage: 8 } }]);
    expect((await s.get(`/api/v1/vehicles/${s.vehicleId}/battery_statuses/_current`)).body).toEqual({ batteryStatus: { status: null, timestamp: null } });
  });
});

describe('a vehicle without diagnostics', () => {
  it('has empty code and collision lists and a null battery status', async () => {
    const s = await setup();
    const codes = await s.get(`/api/v1/vehicles/${s.vehicleId}/codes`);
    expect(codes).toMatchObject({ status: 200, body: { codes: [], meta: { pagination: { remaining: 0, limit: 20, sortDir: 'desc', links: {} } } } });
    for (const state of ['active', 'inactive', 'all', '']) expect((await s.get(`/api/v1/vehicles/${s.vehicleId}/codes?state=${state}`)).body.codes).toEqual([]);
    expect((await s.get(`/api/v1/vehicles/${s.vehicleId}/collisions`)).body.collisions).toEqual([]);
    expect((await s.get(`/api/v1/devices/${s.device.id}/collisions`)).body.collisions).toEqual([]);
    expect((await s.get(`/api/v1/vehicles/${s.vehicleId}/battery_statuses/_current`))).toEqual({ status: 200, body: { batteryStatus: { status: null, timestamp: null } } });
  });

  it('hides another application\'s vehicle and device (404), and its collisions and codes', async () => {
    const s = await setup();
    await s.publish([{ id: 'c', ts: T0, collision: { peakG: 5 }, dtcs: ['P0300'] }]);
    const other = await g.t.make.application();
    for (const url of [`/api/v1/vehicles/${s.vehicleId}/codes`, `/api/v1/vehicles/${s.vehicleId}/collisions`,
      `/api/v1/devices/${s.device.id}/collisions`, `/api/v1/vehicles/${s.vehicleId}/battery_statuses/_current`]) {
      expect((await g.t.get(url, other.auth)).statusCode).toBe(404);
    }
    const [c] = (await s.get(`/api/v1/devices/${s.device.id}/collisions`)).body.collisions;
    expect((await g.t.get(`/api/v1/collisions/${c.id}`, other.auth)).statusCode).toBe(404);
  });
});
