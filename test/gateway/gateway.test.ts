import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { storedMessages } from '../helpers/telemetry.factory.js';
import { slotOf } from '../../db/message-data.sql.js';
import { frameUuid } from '../../lib/uuid7.js';

let g: TestGateway;
beforeAll(async () => { g = await startTestGateway(); });
afterAll(async () => { await g?.close(); });

const ago = (ms: number) => new Date(Date.now() - ms);
const topic = (deviceId: string) => `devices/${deviceId}/frames`;
const frames = (deviceId: string) => storedMessages(g.t.db.knex).where('device_id', deviceId).orderBy('ts');

async function setup() {
  const app = await g.t.make.application();
  const device = await g.t.make.device(app.principal);
  const client = await g.connect(device);
  const publish = (payload: unknown, qos: 0 | 1 = 1) =>
    client.publishAsync(topic(device.id), typeof payload === 'string' ? payload : JSON.stringify(payload), { qos });
  const api = async (url: string) => {
    const res = await g.t.app.inject({ method: 'GET', url, headers: { authorization: app.auth } });
    return res.json();
  };
  return { app, device, client, publish, api };
}

describe('durability', () => {
  it('acknowledges a QoS 1 frame only once it is stored: the API returns it as soon as PUBACK arrives', async () => {
    const { device, publish, api } = await setup();
    const ts = ago(1000);
    await publish({ id: 'f-1', ts: ts.toISOString(), pids: { '0D': '3C' }, location: { lat: 32.7767, lon: -96.797 } });
    const body = await api(`/api/v1/devices/${device.id}/messages`);
    expect(body.messages).toHaveLength(1);
    expect(body.messages[0]).toMatchObject({
      timestamp: ts.toISOString(),
      data: { vehicleSpeed: 60, location: { type: 'Point', coordinates: [-96.797, 32.7767] } },
    });
    const [row] = await g.t.db.knex.raw('SELECT ST_X(location) AS lon, ST_Y(location) AS lat FROM messages WHERE device_id = ?', [device.id])
      .then((r) => r.rows);
    expect(row).toEqual({ lon: -96.797, lat: 32.7767 });
  });

  it('records the batch in the cross-process feed on PostgreSQL; on PGlite not while nothing in the process follows it', async () => {
    const { device, publish } = await setup();
    await publish({ id: 'feed-1', ts: ago(500).toISOString() });
    const { rows } = await g.t.db.knex.raw('SELECT count(*)::int AS n FROM message_feed WHERE ?::uuid = ANY (device_ids)', [device.id]);
    expect(rows[0].n).toBe(g.t.db.kind === 'pg' ? 1 : 0);
  });

  it('stores QoS 0 frames too', async () => {
    const { device, publish } = await setup();
    await publish({ ts: ago(500).toISOString(), data: { fuelLevelInput: 42.5 } }, 0);
    const rows = await eventually(() => frames(device.id), (r) => r.length === 1);
    expect(rows.map((r) => r.data)).toEqual([{ fuelLevelInput: 42.5 }]);
  });

  it('stores a re-sent frame once, whether it comes again in a later payload or twice in one', async () => {
    const { device, publish } = await setup();
    const [first, second] = [ago(3000), ago(2000)];
    const frame = { id: 'same', ts: first.toISOString(), data: { rpm: 800 } };
    await publish(frame);
    await publish(frame);
    await publish([{ id: 7, ts: second.toISOString() }, { id: 7, ts: second.toISOString() }]);
    // a frame is its device, frame id and timestamp: its id is made of them (lib/uuid7.ts frameUuid)
    expect((await frames(device.id)).map((r) => r.id))
      .toEqual([frameUuid(first.getTime(), device.id, 'same'), frameUuid(second.getTime(), device.id, '7')]);
    // the same frame id at another time is another frame
    await publish({ ...frame, ts: ago(1000).toISOString() });
    expect(await frames(device.id)).toHaveLength(3);
  });

  it('stores a late frame where it belongs in time', async () => {
    const { device, publish, api } = await setup();
    const [t1, t2, t3] = [ago(30_000), ago(20_000), ago(10_000)];
    await publish({ ts: t3.getTime(), data: { rpm: 3000 } });
    await publish({ ts: t1.getTime(), data: { rpm: 1000 } });
    await publish({ ts: t2.toISOString(), data: { rpm: 2000 } });
    const body = await api(`/api/v1/devices/${device.id}/messages`);
    expect(body.messages.map((m: any) => [m.timestamp, m.data.rpm])).toEqual([
      [t3.toISOString(), 3000], [t2.toISOString(), 2000], [t1.toISOString(), 1000],
    ]);
  });

  it('keeps only the parameters present in each frame, and what else it carried apart', async () => {
    const { device, publish } = await setup();
    await publish([
      { ts: ago(2000).toISOString(), pids: { '0C': '1AF8' }, dtcs: ['P0300'], battery: { voltage: 12.4 }, collision: { peakG: 4.5 } },
      { ts: ago(1000).toISOString(), data: { coolantTemp: 90 }, location: { lat: 1, lon: 2, speed: 30, satellites: 8 } },
    ]);
    const rows = await frames(device.id).select(g.t.db.knex.raw(`num[${slotOf('gps.speed')}] AS gps_speed`),
      g.t.db.knex.raw(`num[${slotOf('gps.satellites')}] AS gps_satellites`));
    expect(rows.map((r) => [r.data, r.extra, r.gps_speed, r.gps_satellites])).toEqual([
      [{ rpm: 1726 }, { dtcs: ['P0300'], battery: { voltage: 12.4 }, collision: { peakG: 4.5 } }, null, null],
      [{ coolantTemp: 90, location: { type: 'Point', coordinates: [2, 1] } }, null, 30, 8],
    ]);
  });
});

describe('raw OBD-II PIDs', () => {
  // PID, data bytes, catalog key, value in the catalog's unit (SAE J1979 formulas).
  const TABLE: [string, string, string, number | string][] = [
    ['04', '80', 'calculatedLoadValue', 50.196078], // A*100/255 %
    ['05', '7B', 'coolantTemp', 83], // A-40 degC
    ['06', '90', 'shortTermFuelTrimBank1', 12.5], // (A-128)*100/128 %
    ['07', '70', 'longTermFuelTrimBank1', -12.5],
    ['0A', '64', 'fuelPressure', 300], // 3A kPa
    ['0B', '65', 'intakeManifoldPressure', 101], // kPa
    ['0C', '1AF8', 'rpm', 1726], // (256A+B)/4
    ['0D', '3C', 'vehicleSpeed', 60], // km/h
    ['0E', '8C', 'timingAdvance', 6], // A/2-64 deg
    ['0F', '50', 'intakeAirTemperature', 40], // degC
    ['10', '01F4', 'massAirFlow', 5], // (256A+B)/100 g/s
    ['11', 'FF', 'absoluteThrottleSensorPosition', 100], // %
    ['1F', '012C', 'runTimeSinceEngineStart', 300], // s
    ['2F', '80', 'fuelLevelInput', 50.196078], // %
    ['33', '62', 'barometricPressure', 98], // kPa
    ['42', '3A98', 'controlModuleVoltage', 15], // (256A+B)/1000 V
    ['46', '3C', 'ambientAirTemperature', 20], // degC
    ['51', '01', 'fuelType', 'Gasoline'],
    ['5C', '6E', 'engineOilTemperature', 70], // degC
    ['5E', '0190', 'engineFuelRate', 20], // (256A+B)/20 L/h
  ];

  it('decodes each PID of a published frame to the catalog key and unit', async () => {
    const { device, publish } = await setup();
    await publish({ ts: ago(1000).toISOString(), pids: Object.fromEntries(TABLE.map(([pid, bytes]) => [pid, bytes])) });
    const [row] = await frames(device.id);
    expect(row.data).toEqual(Object.fromEntries(TABLE.map(([, , key, value]) => [key, value])));
  });
});
