import type { Knex } from 'knex';
import { streamPage, type StreamWindow } from '../paging.js';
import { readableDeviceIds, type Principal } from './scope.js';

export interface Collision {
  id: string; deviceId: string; vehicleId: string | null; timestamp: Date;
  /** Degrees (WGS 84); null when the device had no position near the impact. */
  latitude: number | null; longitude: number | null;
}

const COLUMNS = ['c.id', 'c.device_id', 'c.vehicle_id', 'c.ts', 'c.latitude', 'c.longitude'];
interface CollisionRow {
  id: string; device_id: string; vehicle_id: string | null; ts: Date | string;
  latitude: number | string | null; longitude: number | string | null;
}
const toCollision = (r: CollisionRow): Collision => ({
  id: r.id, deviceId: r.device_id, vehicleId: r.vehicle_id, timestamp: new Date(r.ts),
  latitude: r.latitude === null ? null : Number(r.latitude), longitude: r.longitude === null ? null : Number(r.longitude),
});

/** Reading collisions, limited to the devices the application can read. */
export function collisionsRepository(knex: Knex) {
  const visible = (trx: Knex, app: Principal) => trx('collisions as c').select(COLUMNS).whereIn('c.device_id', readableDeviceIds(trx, app));
  const page = async (base: () => Knex.QueryBuilder, w: StreamWindow) => {
    const p = await streamPage<CollisionRow>(base, 'c.ts', w, 'c.id');
    return { remaining: p.remaining, prior: p.prior, newest: p.newest, collisions: p.rows.map(toCollision) };
  };
  return {
    listForDevice: (app: Principal, deviceId: string, w: StreamWindow, trx: Knex = knex) =>
      page(() => visible(trx, app).where('c.device_id', deviceId), w),
    listForVehicle: (app: Principal, vehicleId: string, w: StreamWindow, trx: Knex = knex) =>
      page(() => visible(trx, app).where('c.vehicle_id', vehicleId), w),
    async get(app: Principal, id: string, trx: Knex = knex): Promise<Collision | undefined> {
      const row = await visible(trx, app).where('c.id', id).first();
      return row && toCollision(row);
    },
  };
}
export type CollisionsRepository = ReturnType<typeof collisionsRepository>;
