import type { Knex } from 'knex';

export type AppKind = 'enterprise' | 'consumer';
export interface Principal { id: string; kind: AppKind }

/**
 * Devices an application may read (docs/concepts/devices-and-frames.md): a consumer application those whose owners
 * authorized it; an Enterprise application must also have registered them.
 */
export function readableDeviceIds(knex: Knex, app: Principal): Knex.QueryBuilder {
  const q = knex('authorizations as a').select('a.device_id').where('a.application_id', app.id);
  if (app.kind === 'enterprise') {
    q.join('registrations as r', function () {
      this.on('r.device_id', '=', 'a.device_id').andOn('r.application_id', '=', 'a.application_id');
    });
  }
  return q;
}

export async function canReadDevice(knex: Knex, app: Principal, deviceId: string): Promise<boolean> {
  const row = await readableDeviceIds(knex, app).where('a.device_id', deviceId).first();
  return Boolean(row);
}
