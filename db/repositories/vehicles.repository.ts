import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { NotFound } from '../../lib/errors.js';
import { offsetPage, type OffsetWindow } from '../paging.js';
import { readableDeviceIds, type Principal } from './scope.js';

export interface Vehicle {
  id: string; vin: string; year: string | null; make: string | null; model: string | null; trim: string | null;
  data: Record<string, unknown> | null; createdAt: Date; lastStartup: Date | null;
}
export interface VehicleDetails { year?: string | null; make?: string | null; model?: string | null; trim?: string | null; data?: Record<string, unknown> | null }

const COLUMNS = ['v.id', 'v.vin', 'v.year', 'v.make', 'v.model', 'v.trim', 'v.data', 'v.created_at', 'v.last_startup'];

/**
 * A vehicle as one application sees it (issue 10 item 12): several applications' devices may share a
 * vehicle (same VIN), so the fields that come from devices are computed from the devices the caller
 * can read only. `createdAt` is when the first of them was associated with the vehicle, `lastStartup`
 * their latest startup event; VIN-decoded details are the VIN's, the same for everyone.
 */
function columnsFor(trx: Knex, app: Principal) {
  const readable = () => readableDeviceIds(trx, app);
  return [
    'v.id', 'v.vin', 'v.year', 'v.make', 'v.model', 'v.trim', 'v.data',
    trx('device_vehicles as cdv').min('cdv.created_at').where('cdv.vehicle_id', trx.ref('v.id'))
      .whereIn('cdv.device_id', readable()).as('created_at'),
    trx('events as se').max('se.ts').where('se.vehicle_id', trx.ref('v.id')).where('se.event_type', 'startup')
      .whereIn('se.device_id', readable()).as('last_startup'),
  ];
}
const toVehicle = (r: Record<string, any>): Vehicle => ({
  id: r.id, vin: r.vin, year: r.year, make: r.make, model: r.model, trim: r.trim, data: r.data,
  createdAt: r.created_at, lastStartup: r.last_startup,
});

export function vehiclesRepository(knex: Knex) {
  return {
    /** Vehicles the device was in, chronologically; a vehicle repeats when the device moved back (reference-notes §1.1). */
    async listForDevice(app: Principal, deviceId: string, w: OffsetWindow, trx: Knex = knex) {
      const base = () => trx('device_vehicles as dv').join('vehicles as v', 'v.id', 'dv.vehicle_id')
        .select([...columnsFor(trx, app), 'dv.started_at', 'dv.id as association_id']).where('dv.device_id', deviceId);
      const page = await offsetPage<Record<string, any>>(base, [{ column: 'dv.started_at', order: 'asc' }, { column: 'dv.id', order: 'asc' }], w);
      return { total: page.total, vehicles: page.rows.map(toVehicle) };
    },

    async latestForDevice(app: Principal, deviceId: string, trx: Knex = knex): Promise<Vehicle | null> {
      const row = await trx('device_vehicles as dv').join('vehicles as v', 'v.id', 'dv.vehicle_id').select(columnsFor(trx, app))
        .where('dv.device_id', deviceId).orderBy([{ column: 'dv.started_at', order: 'desc' }, { column: 'dv.created_at', order: 'desc' }]).first();
      return row ? toVehicle(row) : null;
    },

    /** The vehicle the device was in at `at` (late frames are attributed to the vehicle of their time). */
    async vehicleIdAt(deviceId: string, at: Date, trx: Knex = knex): Promise<string | null> {
      const row = await trx('device_vehicles').select('vehicle_id').where('device_id', deviceId).where('started_at', '<=', at)
        .orderBy([{ column: 'started_at', order: 'desc' }, { column: 'created_at', order: 'desc' }]).first();
      return row?.vehicle_id ?? null;
    },

    /** vehicleIdAt for many (device, time) points in one statement, in the order given. */
    async vehicleIdsAt(points: { deviceId: string; at: Date }[], trx: Knex = knex): Promise<(string | null)[]> {
      if (!points.length) return [];
      const { rows } = await trx.raw(`
        SELECT p.i, (SELECT dv.vehicle_id FROM device_vehicles dv WHERE dv.device_id = p.device_id AND dv.started_at <= p.at
          ORDER BY dv.started_at DESC, dv.created_at DESC LIMIT 1) AS vehicle_id
        FROM unnest(?::uuid[], ?::timestamptz[]) WITH ORDINALITY AS p(device_id, at, i)`,
      [points.map((p) => p.deviceId), points.map((p) => p.at.toISOString())]);
      const out = new Array<string | null>(points.length).fill(null);
      for (const r of rows as { i: string | number; vehicle_id: string | null }[]) out[Number(r.i) - 1] = r.vehicle_id;
      return out;
    },

    /** A vehicle is visible to an application when one of the devices it has been in is; seen through those devices. */
    async get(app: Principal, id: string, trx: Knex = knex): Promise<Vehicle | undefined> {
      const row = await trx('vehicles as v').select(columnsFor(trx, app)).where('v.id', id)
        .whereExists(trx('device_vehicles as dv').where('dv.vehicle_id', trx.ref('v.id'))
          .whereIn('dv.device_id', readableDeviceIds(trx, app)))
        .first();
      return row && toVehicle(row);
    },

    async canRead(app: Principal, id: string, trx: Knex = knex): Promise<boolean> {
      return Boolean(await this.get(app, id, trx));
    },

    async requireReadable(app: Principal, id: string, trx: Knex = knex): Promise<void> {
      if (!(await this.canRead(app, id, trx))) throw new NotFound();
    },

    /** Device ids of the vehicle that the application can read, most recent association first. */
    async readableDeviceIds(app: Principal, vehicleId: string, max = 20, trx: Knex = knex): Promise<string[]> {
      const rows = await trx('device_vehicles').select('device_id').max({ last: 'started_at' }).where('vehicle_id', vehicleId)
        .groupBy('device_id').orderBy('last', 'desc').limit(max);
      const ids = rows.map((r: any) => r.device_id as string);
      if (!ids.length) return [];
      const readable = new Set((await readableDeviceIds(trx, app).whereIn('a.device_id', ids)).map((r: any) => r.device_id));
      return ids.filter((id) => readable.has(id));
    },

    async findByVin(vin: string, trx: Knex = knex): Promise<Vehicle | undefined> {
      const row = await trx('vehicles as v').select(COLUMNS).where('v.vin', vin).first();
      return row && toVehicle(row);
    },

    /** Creates the vehicle of a VIN once; details come from the offline VIN decoder. */
    async upsertByVin(vin: string, details: () => Promise<VehicleDetails>, trx: Knex = knex): Promise<Vehicle> {
      const found = await this.findByVin(vin, trx);
      if (found) return found;
      const d = await details();
      const row = {
        id: randomUUID(), vin, year: d.year ?? null, make: d.make ?? null, model: d.model ?? null, trim: d.trim ?? null,
        data: d.data ? JSON.stringify(d.data) : null, created_at: new Date(), last_startup: null,
      };
      await trx('vehicles').insert(row).onConflict('vin').ignore();
      return (await this.findByVin(vin, trx))!;
    },

    async associate(deviceId: string, vehicleId: string, at: Date, trx: Knex = knex): Promise<boolean> {
      const current = await this.vehicleIdAt(deviceId, at, trx);
      if (current === vehicleId) return false;
      await trx('device_vehicles').insert({ id: randomUUID(), device_id: deviceId, vehicle_id: vehicleId, started_at: at, created_at: new Date() });
      return true;
    },
  };
}
export type VehiclesRepository = ReturnType<typeof vehiclesRepository>;
