import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';

/** Over real MQTT and HTTP: a vehicle shared by two applications' devices shows each only what its own devices saw. */
let g: TestGateway;
let base: string;
beforeAll(async () => {
  g = await startTestGateway();
  await g.t.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(g.t.app.server.address() as AddressInfo).port}`;
});
afterAll(async () => { await g?.close(); });

const VIN = '1HGCM82633A654321';
const T0 = Date.now() - 3_600_000;
const at = (s: number) => new Date(T0 + s * 1000).toISOString();

async function tenant() {
  const app = await g.t.make.application();
  const device = await g.t.make.device(app.principal);
  const client = await g.connect(device);
  const publish = (frame: unknown) => client.publishAsync(`devices/${device.id}/frames`, JSON.stringify(frame), { qos: 1 });
  const get = async (path: string) => {
    const res = await fetch(`${base}${path}`, { headers: { authorization: app.auth }, signal: AbortSignal.timeout(5_000) });
    expect(res.status, path).toBe(200);
    return res.json();
  };
  /** The shared vehicle through every endpoint that shows it to this application. */
  const views = async () => {
    const latest = (await get(`/api/v1/devices/${device.id}/vehicles/_latest`)).vehicle;
    const listed = (await get(`/api/v1/devices/${device.id}/vehicles`)).vehicles[0];
    const full = (await get(`/api/v1/vehicles/${latest.id}`)).vehicle;
    return [latest, listed, full].map((v) => ({ id: v.id, vin: v.vin, createdAt: v.createdAt, lastStartup: v.lastStartup }));
  };
  return { app, device, publish, views };
}

describe('a vehicle shared by two applications', () => {
  it("shows each application lastStartup and createdAt from its own devices only, never the other application's device", async () => {
    const a = await tenant();
    const b = await tenant();
    await a.publish({ ts: at(0), kind: 'startup', vin: VIN });
    const betweenMs = Date.now();
    await new Promise((r) => setTimeout(r, 20));
    await b.publish({ ts: at(60), kind: 'startup', vin: VIN });
    await b.publish({ ts: at(120), kind: 'startup', vin: VIN });

    const seenByA = await a.views();
    const seenByB = await b.views();
    expect(seenByA[0].id).toBe(seenByB[0].id); // one vehicle (one VIN)
    for (const v of seenByA) expect(v).toEqual({ ...seenByA[0], lastStartup: at(0) });
    for (const v of seenByB) expect(v).toEqual({ ...seenByB[0], lastStartup: at(120) });
    // createdAt is when the caller's own device was first seen in the vehicle, not the other's.
    expect(Date.parse(seenByA[0].createdAt)).toBeLessThanOrEqual(betweenMs);
    expect(Date.parse(seenByB[0].createdAt)).toBeGreaterThan(betweenMs);

    // Later startups of B's device leave A's view unchanged; A's own move it.
    await b.publish({ ts: at(300), kind: 'startup', vin: VIN });
    expect((await a.views())[2].lastStartup).toBe(at(0));
    await a.publish({ ts: at(200), kind: 'startup', vin: VIN });
    expect((await a.views()).map((v) => v.lastStartup)).toEqual([at(200), at(200), at(200)]);
    expect((await b.views())[2].lastStartup).toBe(at(300));
  });
});
