import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';

let g: TestGateway;
beforeAll(async () => { g = await startTestGateway(); });
afterAll(async () => { await g?.close(); });

const HONDA = '1HGCM82633A004352'; // 2003 Honda Accord EX-V6 coupe (vPIC)
const FORD = '1FTFW1ET5DFC10312'; // 2013 Ford F-150 (check digit wrong: decoded anyway)
const BASE = Date.now() - 600_000;
const at = (s: number) => new Date(BASE + s * 1000);

async function setup() {
  const app = await g.t.make.application();
  const device = await g.t.make.device(app.principal);
  const client = await g.connect(device);
  const publish = (payload: unknown) => client.publishAsync(`devices/${device.id}/frames`, JSON.stringify(payload), { qos: 1 });
  const api = async (url: string) => (await g.t.app.inject({ method: 'GET', url, headers: { authorization: app.auth } })).json();
  const history = async () => (await g.t.db.knex('device_vehicles as dv').join('vehicles as v', 'v.id', 'dv.vehicle_id')
    .select('v.vin', 'dv.started_at').where('dv.device_id', device.id).orderBy('dv.started_at'))
    .map((r) => [r.vin, new Date(r.started_at).toISOString()]);
  // The device's own events (trips derive trip-* events from the same frames; test/db/trips.* covers them).
  const events = async () => (await g.t.db.knex('events').where('device_id', device.id).whereNot('event_type', 'like', 'trip-%').whereNot('object_type', 'device').orderBy('ts'))
    .map((e) => ({ type: e.event_type, ts: new Date(e.ts).toISOString(), objectType: e.object_type, objectId: e.object_id, vehicleId: e.vehicle_id, meta: e.meta }));
  return { device, publish, api, history, events };
}

describe('vehicles from VINs', () => {
  it('creates the vehicle of a new VIN with year, make, model, trim and data decoded offline', async () => {
    const { device, publish, api } = await setup();
    await publish({ ts: at(0).toISOString(), kind: 'startup', vin: HONDA });
    const latest = (await api(`/api/v1/devices/${device.id}/vehicles/_latest`)).vehicle;
    expect(latest).toMatchObject({ vin: HONDA, year: '2003', make: 'Honda', model: 'Accord', trim: 'EX-V6' });
    const full = (await api(`/api/v1/vehicles/${latest.id}`)).vehicle;
    expect(full.data).toMatchObject({
      manufacturer: 'AMERICAN HONDA MOTOR CO., INC.', bodyStyle: 'Coupe', doors: 2, fuelType: 'Gasoline',
      engine: { model: 'J30A4', cylinders: 6, configuration: 'V-Shaped', fuelType: 'Gasoline' }, checkDigitValid: true,
    });
  });

  it('accepts the VIN as a raw mode 09 PID 02 response', async () => {
    const { device, publish, api } = await setup();
    const hex = '49 02 01 00 00 00 ' + Buffer.from(FORD).toString('hex').replace(/(..)/g, '$1 ');
    await publish({ ts: at(0).toISOString(), vin: hex });
    expect((await api(`/api/v1/devices/${device.id}/vehicles/_latest`)).vehicle)
      .toMatchObject({ vin: FORD, year: '2013', make: 'Ford', model: 'F-150' });
  });

  it('still creates a vehicle for a VIN that cannot be decoded, with what can be known', async () => {
    const { device, publish, api } = await setup();
    await publish([{ ts: at(0).toISOString(), vin: 'VV0HXNZW2E4UAVB1L' }, { ts: at(1).toISOString(), vin: 'WVWZZZ1JZXW000001' }]);
    const list = (await api(`/api/v1/devices/${device.id}/vehicles`)).vehicles;
    expect(list.map((v: any) => [v.vin, v.year ?? null, v.make ?? null, v.model ?? null])).toEqual([
      ['VV0HXNZW2E4UAVB1L', null, null, null], // no manufacturer known: nothing but the VIN
      ['WVWZZZ1JZXW000001', '1999', 'Volkswagen', null], // European VIN: manufacturer and year from WMI and position 10
    ]);
    // what is not known is absent, not null ("may be absent"), in lists and on the single vehicle
    expect(Object.keys(list[0]).filter((k) => ['year', 'make', 'model', 'trim'].includes(k))).toEqual([]);
    expect(Object.keys(list[1]).filter((k) => ['year', 'make', 'model', 'trim'].includes(k))).toEqual(['year', 'make']);
    expect((await api(`/api/v1/vehicles/${list[0].id}`)).vehicle).not.toHaveProperty('year');
  });

  it('adds an association when the VIN changes, and none when it repeats', async () => {
    const { publish, history } = await setup();
    await publish([{ ts: at(0).toISOString(), vin: HONDA }, { ts: at(10).toISOString(), vin: HONDA }]);
    await publish({ ts: at(20).toISOString(), vin: FORD });
    await publish({ ts: at(30).toISOString(), vin: HONDA });
    expect(await history()).toEqual([[HONDA, at(0).toISOString()], [FORD, at(20).toISOString()], [HONDA, at(30).toISOString()]]);
  });

  it('places a late VIN frame in time: it moves the start of the same vehicle back instead of repeating it', async () => {
    const { publish, history } = await setup();
    await publish({ ts: at(20).toISOString(), vin: HONDA });
    await publish({ ts: at(10).toISOString(), vin: HONDA });
    await publish({ ts: at(5).toISOString(), vin: FORD });
    expect(await history()).toEqual([[FORD, at(5).toISOString()], [HONDA, at(10).toISOString()]]);
  });
});

describe('device events', () => {
  it('turns startup, shutdown and phone-home frames into events whose object is the vehicle of their time', async () => {
    const { publish, events, history } = await setup();
    await publish([
      { ts: at(0).toISOString(), kind: 'phone-home' },
      { ts: at(1).toISOString(), kind: 'startup', vin: HONDA },
      { ts: at(2).toISOString(), data: { rpm: 900 } },
      { ts: at(3).toISOString(), kind: 'shutdown' },
    ]);
    const vehicleId = (await g.t.repos.vehicles.findByVin(HONDA))!.id;
    expect(await history()).toEqual([[HONDA, at(1).toISOString()]]);
    expect(await events()).toEqual([
      { type: 'phone-home', ts: at(0).toISOString(), objectType: 'vehicle', objectId: null, vehicleId: null, meta: null },
      { type: 'startup', ts: at(1).toISOString(), objectType: 'vehicle', objectId: vehicleId, vehicleId, meta: null },
      { type: 'shutdown', ts: at(3).toISOString(), objectType: 'vehicle', objectId: vehicleId, vehicleId, meta: null },
    ]);
  });

  it('makes no event twice for a re-sent startup frame', async () => {
    const { publish, events } = await setup();
    const frame = { id: 'boot-1', ts: at(0).toISOString(), kind: 'startup' };
    await publish(frame);
    await publish(frame);
    expect((await events()).map((e) => e.type)).toEqual(['startup']);
  });
});
