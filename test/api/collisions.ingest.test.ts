import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { vehicleOverMqtt } from '../helpers/vehicle-over-mqtt.js';

/** Collisions over a real gateway: hand-written frames over MQTT, read back through the API. */
let g: TestGateway;
beforeAll(async () => { g = await startTestGateway(); });
afterAll(async () => { await g?.close(); });

const T0 = Date.now() - 600_000;
const iso = (s: number) => new Date(T0 + s * 1000).toISOString();
const setup = () => vehicleOverMqtt(g, T0, 'VVCRSH');

describe('collisions', () => {
  const G = 9.80665;
  const drive = (id: string, s: number, kmh: number, lat: number, accelX = 0.2) => ({
    id, ts: T0 + s * 1000, location: { lat, lon: -96.8, speed: kmh },
    accel: { maxX: Math.max(accelX, 0.1), minX: Math.min(accelX, -0.1), maxY: 0.1, minY: -0.1, maxZ: G + 0.1, minZ: G - 0.1 },
    data: { vehicleSpeed: kmh },
  });

  it('records one collision per impact at the impact location, with a collision event', async () => {
    const s = await setup();
    await s.publish([drive('1', 0, 50, 32.70), drive('2', 5, 50, 32.71), drive('3', 10, 50, 32.72, -4 * G), drive('4', 15, 12, 32.7201, -3 * G)]);
    await s.publish([drive('5', 60, 5, 32.75, -6 * G), drive('6', 120, 30, 32.76, -1.5 * G)]); // too slow; too weak
    const list = (await s.get(`/api/v1/devices/${s.device.id}/collisions`)).body;
    expect(list.collisions).toHaveLength(1);
    const c = list.collisions[0];
    expect(c).toMatchObject({ deviceId: s.device.id, vehicleId: s.vehicleId, timestamp: iso(10), location: { latitude: 32.72, longitude: -96.8 } });
    expect(list.meta.pagination).toMatchObject({ remaining: 0, links: {} });
    expect((await s.get(`/api/v1/vehicles/${s.vehicleId}/collisions`)).body.collisions.map((x: any) => x.id)).toEqual([c.id]);
    expect((await s.get(c.links.self)).body.collision).toEqual(c);
    const events = await s.events('collision');
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ timestamp: iso(10), object: { type: 'vehicle', id: s.vehicleId }, meta: null });

    await s.publish([drive('late', 8, 50, 32.719, -5 * G)]); // a late sample of the same impact moves it earlier, one event
    const after = (await s.get(`/api/v1/devices/${s.device.id}/collisions`)).body.collisions;
    expect(after.map((x: any) => [x.timestamp, x.location.latitude])).toEqual([[iso(8), 32.719]]);
    expect((await s.events('collision')).map((e: any) => e.timestamp)).toEqual([iso(8)]);
  });

  it('counts an impact as a collision and not also as a hard brake; a hard brake of the same trip still counts', async () => {
    const s = await setup();
    const shutdown = { id: 'off', ts: T0 + 40_000, kind: 'shutdown', location: { lat: 32.7307, lon: -96.8, speed: 0 }, data: { vehicleSpeed: 0 } };
    await s.publish([
      drive('1', 0, 60, 32.70), drive('2', 5, 60, 32.7008), drive('3', 10, 60, 32.7016, -4.5 * G), // an impact: minX −44 m/s²
      drive('4', 15, 60, 32.7024), drive('5', 20, 60, 32.7032), drive('6', 25, 60, 32.7040, -5), // a hard brake: −5 m/s²
      drive('7', 30, 60, 32.7048), drive('8', 35, 30, 32.7055), shutdown,
    ]);
    expect((await s.get(`/api/v1/devices/${s.device.id}/collisions`)).body.collisions.map((c: any) => c.timestamp)).toEqual([iso(10)]);
    const [trip] = (await s.get(`/api/v1/devices/${s.device.id}/trips`)).body.trips;
    expect(trip).toMatchObject({ status: 'completed', stats: { hardBrakeCount: 1, hardAccelCount: 0 } });
  });

  it('records a collision the device reports, whatever the speed', async () => {
    const s = await setup();
    await s.publish([{ id: 'c', ts: T0, location: { lat: 40.1, lon: -74.2 }, collision: { peakG: 3.2 } }]);
    const [c] = (await s.get(`/api/v1/vehicles/${s.vehicleId}/collisions`)).body.collisions;
    expect(c).toMatchObject({ timestamp: iso(0), location: { latitude: 40.1, longitude: -74.2 } });
  });
});
