import type { TestGateway } from './gateway.js';

/**
 * A device of a new application, connected over MQTT, with a vehicle (its startup frame's VIN one minute before t0):
 * publish frames with QoS 1 (resolves once the batch and everything derived from it committed) and read them back.
 */
let vins = 0;
/** A new 17-character VIN: six characters of the test's own, then a counter. */
const nextVin = (prefix: string) => `${prefix}${String(++vins).padStart(11, '0')}`;

export async function vehicleOverMqtt(g: TestGateway, t0: number, vinPrefix: string) {
  const app = await g.t.make.application();
  const device = await g.t.make.device(app.principal);
  const client = await g.connect(device);
  const vin = nextVin(vinPrefix);
  const publish = (frames: unknown[]) => client.publishAsync(`devices/${device.id}/frames`, JSON.stringify(frames), { qos: 1 });
  const get = async (url: string) => { const res = await g.t.get(url, app.auth); return { status: res.statusCode, body: res.json() }; };
  await publish([{ id: 'vin', ts: t0 - 60_000, kind: 'startup', vin }]);
  const vehicleId: string = (await get(`/api/v1/devices/${device.id}/vehicles/_latest`)).body.vehicle.id;
  const events = async (type: string) => (await get(`/api/v1/devices/${device.id}/events?type=${type}&limit=100`)).body.events.reverse();
  const codes = async (state = 'all') => (await get(`/api/v1/vehicles/${vehicleId}/codes?state=${state}&limit=100`)).body.codes
    .map((c: any) => [c.number, c.start, c.stop]).sort();
  return { app, device, vehicleId, publish, get, events, codes };
}
