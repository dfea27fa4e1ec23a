import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => { t = await buildTestApp(); });
afterAll(async () => { await t?.close(); });

const get = (auth: string, url: string) => t.app.inject({ method: 'GET', url, headers: { authorization: auth } });
const BASE = 'http://localhost:3999';

async function vehicle(vin: string, details = {}) {
  return t.repos.vehicles.upsertByVin(vin, async () => ({ year: '2003', make: 'Honda', model: 'Accord', trim: 'EX', data: { engine: { cylinder: 4 } }, ...details }));
}

describe('vehicles of a device', () => {
  it('lists the vehicles chronologically, repeating one the device moved back to', async () => {
    const app = await t.make.application();
    const d = await t.make.device(app.principal);
    const v1 = await vehicle('1HGCM82633A004352');
    const v2 = await vehicle('2B4GP44R6WR942762', { make: 'Dodge', model: 'Caravan', year: '1998' });
    await t.repos.vehicles.associate(d.id, v1.id, new Date('2026-01-01T00:00:00Z'));
    await t.repos.vehicles.associate(d.id, v2.id, new Date('2026-02-01T00:00:00Z'));
    await t.repos.vehicles.associate(d.id, v1.id, new Date('2026-03-01T00:00:00Z'));
    const body = (await get(app.auth, `/api/v1/devices/${d.id}/vehicles`)).json();
    expect(body.vehicles.map((v: any) => v.vin)).toEqual(['1HGCM82633A004352', '2B4GP44R6WR942762', '1HGCM82633A004352']);
    // createdAt: when the first of the caller's devices was associated with the vehicle (not another application's).
    const [{ first }] = await t.db.knex('device_vehicles').min({ first: 'created_at' }).where({ vehicle_id: v1.id });
    expect(body.vehicles[0]).toEqual({
      id: v1.id, vin: '1HGCM82633A004352', year: '2003', make: 'Honda', model: 'Accord', trim: 'EX',
      createdAt: new Date(first).toISOString(), lastStartup: null,
      links: {
        self: `${BASE}/api/v1/vehicles/${v1.id}`, trips: `${BASE}/api/v1/vehicles/${v1.id}/trips`,
        collisions: `${BASE}/api/v1/vehicles/${v1.id}/collisions`, reportCards: `${BASE}/api/v1/vehicles/${v1.id}/report_cards`,
      },
    });
    expect(body.meta.pagination.total).toBe(3);
    const latest = (await get(app.auth, `/api/v1/devices/${d.id}/vehicles/_latest`)).json();
    expect(latest.vehicle.id).toBe(v1.id);
    expect(latest.vehicle.data).toBeUndefined();
  });

  it('answers a null latest vehicle for a device never in a vehicle', async () => {
    const app = await t.make.application();
    const d = await t.make.device(app.principal);
    const res = await get(app.auth, `/api/v1/devices/${d.id}/vehicles/_latest`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ vehicle: null });
    expect((await get(app.auth, `/api/v1/devices/${d.id}/vehicles`)).json().vehicles).toEqual([]);
  });

  it('gives one vehicle with its data and a self link', async () => {
    const app = await t.make.application();
    const d = await t.make.device(app.principal);
    const v = await vehicle('JH4KA8260MC000000', { make: 'Acura', model: 'Legend', year: '1991' });
    await t.repos.vehicles.associate(d.id, v.id, new Date('2026-01-01T00:00:00Z'));
    const body = (await get(app.auth, `/api/v1/vehicles/${v.id}`)).json();
    expect(body.vehicle).toMatchObject({ id: v.id, vin: 'JH4KA8260MC000000', make: 'Acura', data: { engine: { cylinder: 4 } } });
    expect(body.vehicle.links).toEqual({ self: `${BASE}/api/v1/vehicles/${v.id}` });
  });

  it("keeps another application's vehicles and device vehicles unreachable (404)", async () => {
    const a = await t.make.application();
    const b = await t.make.application();
    const d = await t.make.device(a.principal);
    const v = await vehicle('WVWZZZ1JZXW000001');
    await t.repos.vehicles.associate(d.id, v.id, new Date('2026-01-01T00:00:00Z'));
    expect((await get(b.auth, `/api/v1/vehicles/${v.id}`)).statusCode).toBe(404);
    expect((await get(b.auth, `/api/v1/devices/${d.id}/vehicles`)).statusCode).toBe(404);
    expect((await get(b.auth, `/api/v1/devices/${d.id}/vehicles/_latest`)).statusCode).toBe(404);
  });
});
