import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { runStage, storeFrames, vehicleWithDevice } from './distance.fixtures.js';
import * as m021 from '../../db/migrations/021_steps_on_messages.js';

let t: TestApp;
beforeAll(async () => { t = await buildTestApp(); });
afterAll(async () => { await t?.close(); });

const T0 = Date.UTC(2026, 0, 20, 8, 0, 0);
const steps = async (deviceId: string) => (await t.db.knex('messages').where({ device_id: deviceId }).orderBy('ts')
  .select('id', 'step_m', 'step_source', 'step_vehicle_id')).map((r: any) => ({ ...r, step_m: r.step_m === null ? null : Number(r.step_m) }));

describe('distance steps on the messages (migration 021)', () => {
  it('moves the steps to and from their own table, and a deleted device takes its history either way', async () => {
    const { device, vehicle } = await vehicleWithDevice(t, T0);
    const gone = await vehicleWithDevice(t, T0);
    for (const d of [device, gone.device]) {
      await runStage(t, async (trx) => [await storeFrames(trx, t, d.id, d === device ? vehicle.id : gone.vehicle.id, T0,
        [0, 1, 2].map((k) => ({ s: k * 5, north: k * 100, speed: 72 })))]);
    }
    const before = await steps(device.id);
    expect(before.map((r) => [r.step_source, Math.round(r.step_m!)])).toEqual([['none', 0], ['gps', 100], ['gps', 100]]);

    await m021.down(t.db.knex);
    const table = await t.db.knex('distance_steps').where({ device_id: device.id }).orderBy('ts');
    expect(table.map((r: any) => [r.message_id, Number(r.meters), r.source, r.vehicle_id]))
      .toEqual(before.map((r) => [r.id, r.step_m, r.step_source, r.step_vehicle_id]));
    await t.db.knex('devices').where({ id: gone.device.id }).del();
    expect(await t.db.knex('distance_steps').where({ device_id: gone.device.id })).toEqual([]);

    await m021.up(t.db.knex);
    expect(await steps(device.id)).toEqual(before);
    expect((await t.db.knex.raw("SELECT to_regclass('distance_steps') AS t")).rows[0].t).toBeNull();
    await t.db.knex('devices').where({ id: device.id }).del();
    expect(await t.db.knex('messages').where({ device_id: device.id })).toEqual([]);
  });
});
