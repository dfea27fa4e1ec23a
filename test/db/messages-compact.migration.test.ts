import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import * as m035 from '../../db/migrations/035_messages_compact.js';
import * as m036 from '../../db/migrations/036_time_partitions.js';
import { storedMessages } from '../helpers/telemetry.factory.js';
import { slotOf } from '../../db/message-data.sql.js';

let t: TestApp;
beforeAll(async () => { t = await buildTestApp(); });
afterAll(async () => { await t?.close(); });

describe('messages in the compact layout (migration 035)', () => {
  it('converts every stored message, keeps its data, GPS extras and id, and goes down and up again', async () => {
    const app = await t.make.application('enterprise');
    const device = await t.make.device(app.principal);
    // down in migration order: 036 makes messages a plain table first
    await m036.down(t.db.knex);
    await m035.down(t.db.knex);
    // messages as the wide layout stored them: data with the GeoJSON location, GPS extras in extra, ids of any time
    const wide = [
      { id: randomUUID(), ts: new Date('2026-03-01T10:00:00.123Z'), kind: 'startup', data: { rpm: 800, fuelType: 'Diesel',
        accel: { maxX: 0.1, minZ: 9.7 }, location: { type: 'Point', coordinates: [-96.8, 32.78] } },
        extra: { vin: '1FTFW1ET5DFC10312', gps: { speed: 12, heading: 90 } }, lonlat: [-96.8, 32.78] },
      { id: randomUUID(), ts: new Date('2026-03-01T10:00:01.000Z'), kind: 'telemetry', data: { vehicleSpeed: 40 }, extra: null, lonlat: null },
    ];
    for (const w of wide) {
      await t.db.knex('messages').insert({
        id: w.id, device_id: device.id, ts: w.ts, frame_id: `f-${w.id}`, kind: w.kind, data: JSON.stringify(w.data),
        location: w.lonlat ? t.db.knex.raw('ST_SetSRID(ST_MakePoint(?, ?), 4326)', w.lonlat) : null,
        extra: w.extra ? JSON.stringify(w.extra) : null, received_at: new Date(), vehicle_speed: (w.data as any).vehicleSpeed ?? null,
      });
    }
    await m035.up(t.db.knex);
    const rows = await storedMessages(t.db.knex).where('device_id', device.id).orderBy('ts')
      .select(t.db.knex.raw(`num[${slotOf('gps.speed')}] AS gps_speed`));
    expect(rows.map((r: any) => [r.id, r.kind, r.data, r.extra])).toEqual([
      [wide[0].id, 'startup', wide[0].data, { vin: '1FTFW1ET5DFC10312' }],
      [wide[1].id, 'telemetry', wide[1].data, null],
    ]);
    expect(rows[0].gps_speed).toBe(12);
    // an id from before ids carried their time is still found, with and without its device
    for (const path of [`/api/v1/devices/${device.id}/messages/${wide[0].id}`, `/api/v1/messages/${wide[0].id}`]) {
      const res = await t.get(path, app.auth);
      expect(res.statusCode, path).toBe(200);
      expect(res.json().message.data).toEqual(wide[0].data);
    }
    // down keeps them too, with the GPS extras back in extra
    await m035.down(t.db.knex);
    const back = await t.db.knex('messages').where('device_id', device.id).orderBy('ts').select('id', 'data', 'extra', 'kind');
    expect(back.map((r: any) => [r.id, r.data, r.extra, r.kind])).toEqual(wide.map((w) => [w.id, w.data, w.extra, w.kind]));
    await m035.up(t.db.knex);
    await m036.up(t.db.knex);
  });
});
