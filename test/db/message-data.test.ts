import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { MESSAGE_SLOTS, carriedKeys, dataKeysOf, parametersWithoutSlot, slotOf, storedData } from '../../db/message-data.sql.js';
import { uuid7, uuid7Ms, frameUuid } from '../../lib/uuid7.js';

let t: TestApp;
beforeAll(async () => { t = await buildTestApp(); });
afterAll(async () => { await t?.close(); });

describe('message slots (db/message-data.sql.ts)', () => {
  it('give every numeric catalog parameter a slot, each key once', () => {
    expect(parametersWithoutSlot()).toEqual([]);
    expect(new Set(MESSAGE_SLOTS).size).toBe(MESSAGE_SLOTS.length);
  });

  it('split data in SQL (message_num, message_txt) as the gateway does, and read it back whole', async () => {
    // odd: a number under a key without a slot (not the gateway's: it keeps catalog keys only) stays in txt
    const data = { rpm: 812.5, vehicleSpeed: 0, fuelType: 'Diesel', auxIO: 'on', mafSensor: 3, odd: 5, accel: { maxX: 0.2, minZ: 9.5 },
      oxygenSensorLocations: ['B1S1'], location: { type: 'Point', coordinates: [-96.8, 32.78] } };
    const gps = { speed: 31, satellites: 9 };
    const { rows } = await t.db.knex.raw(`SELECT message_num(?::jsonb, ?::jsonb) AS num, message_txt(?::jsonb) AS txt,
      message_data(message_num(?::jsonb, NULL), message_txt(?::jsonb), ST_SetSRID(ST_MakePoint(-96.8, 32.78), 4326)) AS data`,
    [JSON.stringify(data), JSON.stringify(gps), JSON.stringify(data), JSON.stringify(data), JSON.stringify(data)]);
    const inJs = storedData(data, gps);
    expect(rows[0].num.map((v: unknown) => (v === null ? null : Number(v)))).toEqual(inJs.num);
    expect(rows[0].txt).toEqual(inJs.txt);
    expect(rows[0].data).toEqual(data);
  });

  it('name the data keys a message carries from its columns: a slot\'s parameter, accel for an axis, no GPS extra', async () => {
    const data = { rpm: 900, fuelType: 'Diesel', accel: { minZ: 9.5 }, location: { type: 'Point', coordinates: [2, 1] } };
    const { rows } = await t.db.knex.raw(`SELECT k.key FROM (SELECT message_num(?::jsonb, ?::jsonb) AS num, message_txt(?::jsonb) AS txt,
      ST_SetSRID(ST_MakePoint(2, 1), 4326) AS location) m CROSS JOIN LATERAL (${carriedKeys('m')}) AS k(key)`,
    [JSON.stringify(data), JSON.stringify({ speed: 30 }), JSON.stringify(data)]);
    const carried = rows.map((r: { key: string }) => r.key);
    expect(carried).toEqual(expect.arrayContaining([`#${slotOf('gps.speed')}`, `#${slotOf('rpm')}`]));
    expect(dataKeysOf(carried)).toEqual(new Set(Object.keys(data)));
  });

  it('make ids that carry the timestamp, the same one for a re-sent frame', async () => {
    const ms = Date.UTC(2026, 0, 2, 3, 4, 5, 678);
    expect(uuid7Ms(uuid7(ms))).toBe(ms);
    expect(frameUuid(ms, 'd', 'f1')).toBe(frameUuid(ms, 'd', 'f1'));
    expect(frameUuid(ms, 'd', 'f1')).not.toBe(frameUuid(ms + 1, 'd', 'f1'));
    expect(uuid7Ms(frameUuid(ms, 'd', 'f1'))).toBe(ms);
    const { rows } = await t.db.knex.raw('SELECT message_id_ts(?::uuid) AS a, message_id_ts(message_uuid(?::timestamptz)) AS b',
      [frameUuid(ms, 'd', 'f1'), new Date(ms)]);
    expect([new Date(rows[0].a).getTime(), new Date(rows[0].b).getTime()]).toEqual([ms, ms]);
  });
});
