import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { NotFound } from '../../lib/errors.js';
import { offsetPage, type OffsetWindow } from '../paging.js';
import { readableDeviceIds, type Principal } from './scope.js';
import { vehicleAt } from '../vehicle-at.sql.js';
import { prepared } from '../prepared.js';

export interface Vehicle {
  id: string; vin: string; year: string | null; make: string | null; model: string | null; trim: string | null;
  data: Record<string, unknown> | null; createdAt: Date; lastStartup: Date | null;
}
export interface VehicleDetails { year?: string | null; make?: string | null; model?: string | null; trim?: string | null; data?: Record<string, unknown> | null }

const COLUMNS = ['v.id', 'v.vin', 'v.year', 'v.make', 'v.model', 'v.trim', 'v.data', 'v.created_at', 'v.last_startup'];

/**
 * A vehicle as one application sees it (docs/concepts/vehicles.md): several applications' devices may share a
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
interface VehicleRow {
  id: string; vin: string; year: string | null; make: string | null; model: string | null; trim: string | null;
  data: Record<string, unknown> | null; created_at: Date; last_startup: Date | null;
}
const toVehicle = (r: VehicleRow): Vehicle => ({
  id: r.id, vin: r.vin, year: r.year, make: r.make, model: r.model, trim: r.trim, data: r.data,
  createdAt: r.created_at, lastStartup: r.last_startup,
});

const KNOWN_VINS = `SELECT vin FROM vehicles WHERE vin = ANY(?::text[])`;

const VEHICLES_FOR_VINS = `
  WITH v AS (SELECT * FROM json_to_recordset(?::json) AS v(id uuid, vin text, year text, make text, model text, trim text, data jsonb)),
  added AS (
    INSERT INTO vehicles (id, vin, year, make, model, trim, data, created_at, last_startup)
    SELECT v.id, v.vin, v.year, v.make, v.model, v.trim, v.data, now(), NULL FROM v
    ON CONFLICT (vin) DO NOTHING RETURNING id, vin)
  SELECT id, vin FROM added
  UNION ALL
  SELECT x.id, x.vin FROM vehicles x JOIN v ON x.vin = v.vin WHERE NOT EXISTS (SELECT 1 FROM added a WHERE a.vin = x.vin)`;

export function vehiclesRepository(knex: Knex) {
  return {
    /** Vehicles the device was in, chronologically; a vehicle repeats when the device moved back. */
    async listForDevice(app: Principal, deviceId: string, w: OffsetWindow, trx: Knex = knex) {
      const base = () => trx('device_vehicles as dv').join('vehicles as v', 'v.id', 'dv.vehicle_id')
        .select([...columnsFor(trx, app), 'dv.started_at', 'dv.id as association_id']).where('dv.device_id', deviceId);
      const page = await offsetPage<VehicleRow>(base, [{ column: 'dv.started_at', order: 'asc' }, { column: 'dv.id', order: 'asc' }], w);
      return { total: page.total, vehicles: page.rows.map(toVehicle) };
    },

    async latestForDevice(app: Principal, deviceId: string, trx: Knex = knex): Promise<Vehicle | null> {
      const row = await trx('device_vehicles as dv').join('vehicles as v', 'v.id', 'dv.vehicle_id').select(columnsFor(trx, app))
        .where('dv.device_id', deviceId).orderBy([{ column: 'dv.started_at', order: 'desc' }, { column: 'dv.created_at', order: 'desc' }]).first();
      return row ? toVehicle(row) : null;
    },

    /** The vehicle the device was in at `at` (late frames are attributed to the vehicle of their time). */
    async vehicleIdAt(deviceId: string, at: Date, trx: Knex = knex): Promise<string | null> {
      return (await this.vehicleIdsAt([{ deviceId, at }], trx))[0];
    },

    /** vehicleIdAt for many (device, time) points in one statement, in the order given. */
    async vehicleIdsAt(points: { deviceId: string; at: Date }[], trx: Knex = knex): Promise<(string | null)[]> {
      if (!points.length) return [];
      const { rows } = await trx.raw(`
        SELECT p.i, ${vehicleAt('p.device_id', 'p.at')} AS vehicle_id
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

    /**
     * The `max` most recent devices of the vehicle that the application can read, most recent association first.
     * The scope applies before the cut: devices the application cannot read (another tenant's, or authorized for
     * no one, reporting the same VIN) never push its own out of the most recent.
     */
    async readableDeviceIds(app: Principal, vehicleId: string, max: number, trx: Knex = knex): Promise<string[]> {
      const rows = await trx('device_vehicles').select('device_id').max({ last: 'started_at' }).where('vehicle_id', vehicleId)
        .whereIn('device_id', readableDeviceIds(trx, app))
        .groupBy('device_id').orderBy([{ column: 'last', order: 'desc' }, { column: 'device_id', order: 'asc' }]).limit(max);
      return (rows as { device_id: string }[]).map((r) => r.device_id);
    },

    async findByVin(vin: string, trx: Knex = knex): Promise<Vehicle | undefined> {
      const row = await trx('vehicles as v').select(COLUMNS).where('v.vin', vin).first();
      return row && toVehicle(row);
    },

    /** The vehicle of a VIN, created once (through vehiclesForVins) with the details `details` gives. */
    async upsertByVin(vin: string, details: () => Promise<VehicleDetails>, trx: Knex = knex): Promise<Vehicle> {
      const found = await this.findByVin(vin, trx);
      if (found) return found;
      await this.vehiclesForVins([{ vin, details: await details() }], trx);
      return (await this.findByVin(vin, trx))!;
    },

    /** Of these VINs, the ones with a vehicle already: one statement. */
    async knownVins(vins: string[], trx: Knex = knex): Promise<Set<string>> {
      if (!vins.length) return new Set();
      const { rows } = await prepared(trx, KNOWN_VINS, [vins]);
      return new Set((rows as { vin: string }[]).map((r) => r.vin));
    },

    /**
     * The vehicle of each VIN, created (with its decoded details) where there is none yet: one statement
     * for all the VINs of a batch. A VIN another transaction creates meanwhile keeps that one.
     */
    async vehiclesForVins(vins: { vin: string; details: VehicleDetails | null }[], trx: Knex = knex): Promise<Map<string, string>> {
      if (!vins.length) return new Map();
      const json = vins.map(({ vin, details: d }) => ({
        id: randomUUID(), vin, year: d?.year ?? null, make: d?.make ?? null, model: d?.model ?? null, trim: d?.trim ?? null,
        data: d?.data ?? null,
      }));
      const { rows } = await prepared(trx, VEHICLES_FOR_VINS, [JSON.stringify(json)]);
      const found = new Map((rows as { vin: string; id: string }[]).map((r) => [r.vin, r.id]));
      // A VIN another batch created concurrently: its insert made ours do nothing once it committed, after this
      // statement's snapshot was taken, so only a new statement sees it.
      const late = vins.filter((v) => !found.has(v.vin)).map((v) => v.vin);
      if (late.length) {
        for (const r of (await trx('vehicles').select('id', 'vin').whereIn('vin', late)) as { id: string; vin: string }[]) found.set(r.vin, r.id);
      }
      return found;
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
