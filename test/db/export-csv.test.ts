import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { csvColumns, csvChunkWriter, csvWriter } from '../../api/modules/exports/exports.formats.js';
import { slotOf } from '../../db/message-data.sql.js';
import type { ExportCursor } from '../../db/repositories/exports.repository.js';
import { uuid7 } from '../../lib/uuid7.js';
import { partitionsFor } from '../helpers/partitions.js';

let t: TestApp;
beforeAll(async () => { t = await buildTestApp(); });
afterAll(async () => { await t?.close(); });

/** A float8[] literal with `values` at their keys' slots (a value as written: '-0', '1e-7'). */
function numOf(values: Record<string, string>): string {
  const slots = Object.entries(values).map(([k, v]) => [slotOf(k)!, v] as const);
  const out = Array.from({ length: Math.max(...slots.map(([s]) => s)) }, () => 'NULL');
  for (const [s, v] of slots) out[s - 1] = v;
  return `{${out.join(',')}}`;
}

/** Messages as stored, one a millisecond from `start`: slots, txt and a location given as SQL would hold them. */
interface Stored { num?: Record<string, string>; txt?: unknown; at?: [string, string]; ts?: string }
async function store(deviceId: string, start: number, rows: Stored[]) {
  for (const [i, r] of rows.entries()) {
    const ts = r.ts ?? new Date(start + i).toISOString();
    await partitionsFor(t.db.knex, 'messages', ts);
    await t.db.knex.raw(`INSERT INTO messages (id, device_id, ts, received_at, num, txt, location)
      VALUES (?::uuid, ?::uuid, ?::timestamptz, now(), ?::float8[], ?::jsonb, ${r.at ? 'ST_SetSRID(ST_MakePoint(?::float8, ?::float8), 4326)' : 'NULL'})`,
    [uuid7(Math.max(0, Date.parse(ts))), deviceId, ts, r.num ? numOf(r.num) : null, r.txt === undefined ? null : JSON.stringify(r.txt), ...(r.at ?? [])]);
  }
}

/** Numbers each side of where PostgreSQL's and JavaScript's notations change, and text a spreadsheet or RFC 4180 cares about. */
const TRICKY: Stored[] = [
  { num: { rpm: '-0', vehicleSpeed: '0.1' }, at: ['-0', '0.00001'] },
  { num: { rpm: '0.0001', vehicleSpeed: '0.00009999999999999999' }, at: ['1e-7', '-9.5e-7'] },
  { num: { rpm: '999999999999999.9', vehicleSpeed: '1e15' }, at: ['179.99999999999997', '-89.123456789012345'] },
  { num: { rpm: '1e21', vehicleSpeed: '123456789012345680000', 'accel.maxX': '-1e-5', 'accel.minZ': '9.81' } },
  { num: { rpm: '0.30000000000000004', auxIO: '4294967295' }, txt: { fuelType: '=1+1', fuelSystemStatus: 'say "hi", twice' } },
  { txt: { fuelType: '\tx', fuelSystemStatus: 'two\r\nlines', auxIO: '-on', oxygenSensorLocations: ['B1S1', '@B2'] } },
  { txt: { fuelType: '', fuelSystemStatus: 'é, ünïcode 🚗', oxygenSensorLocations: [] } },
  { txt: { fuelType: 3.25, fuelSystemStatus: true } },
  { txt: { fuelType: { a: [1, 'b'] }, oxygenSensorLocations: ['x', 2], auxIO: null } },
  { txt: { fuelSystemStatus: '+cmd', oxygenSensorLocations: ['a,b', 'c"d'] }, ts: '2024-06-01T00:00:00.123456Z' },
  { txt: { fuelType: '\rx' }, num: { 'accel.minY': '-0.5' }, ts: '0999-12-31T23:59:59.999Z' },
  {},
];

/** The export of `deviceId` as the JavaScript writer writes it from ExportRows (the reference). */
async function inJavaScript(deviceId: string, until: Date) {
  const source = { deviceId };
  const range = { until };
  const w = csvWriter(csvColumns(await t.repos.exports.keys(source, range), false));
  return w.head() + w.rows(await t.repos.exports.page(source, range, null)) + w.tail();
}

describe('CSV records written by PostgreSQL (db/export-csv.sql.ts)', () => {
  it('are byte for byte what the JavaScript writer writes, each record alone or in chunks', async () => {
    const app = await t.make.application();
    const device = await t.make.device(app.principal);
    await store(device.id, Date.parse('2024-05-01T10:00:00Z'), TRICKY);
    const until = new Date('2024-07-01T00:00:00Z');
    const expected = await inJavaScript(device.id, until);
    const source = { deviceId: device.id };
    const columns = csvColumns(await t.repos.exports.keys(source, { until }), false);
    const w = csvChunkWriter(columns);
    for (const chunkRows of [1, 3, 250]) {
      const chunks = await t.repos.exports.csvPage(source, { until }, null, columns.map((c) => c.source), { chunkRows });
      expect(chunks.reduce((n, c) => n + c.rows, 0)).toBe(TRICKY.length);
      expect(w.head() + w.rows(chunks), `chunks of ${chunkRows}`).toBe(expected);
    }
    // each record alone: those SQL can write come as text, the others as the message, for the JavaScript writer
    const alone = await t.repos.exports.csvPage(source, { until }, null, columns.map((c) => c.source), { chunkRows: 1 });
    // oldest first: the year 999, then numbers in exponent form (4), text (3), a number and an object in txt, nothing, micros
    expect(alone.map((c) => c.text !== null)).toEqual([false, false, false, false, false, true, true, true, false, false, true, true]);
    const res = await t.get(`/api/v1/devices/${device.id}/messages/export?until=${until.toISOString()}`, app.auth);
    expect(res.body).toBe(expected);
  });

  it('page by the last record of each page, also when it is one left to JavaScript', async () => {
    const app = await t.make.application();
    const device = await t.make.device(app.principal);
    // the cursor is a Date, to the millisecond, as messages' timestamps are: the row to the microsecond is left out
    await store(device.id, Date.parse('2024-05-01T10:00:00Z'), TRICKY.filter((r) => !r.ts?.includes('.123456')));
    const source = { deviceId: device.id };
    const range = { until: new Date('2024-07-01T00:00:00Z') };
    const columns = csvColumns(await t.repos.exports.keys(source, range), false);
    const w = csvChunkWriter(columns);
    let text = w.head();
    let after: ExportCursor | null = null;
    for (;;) {
      const chunks = await t.repos.exports.csvPage(source, range, after, columns.map((c) => c.source), { limit: 2, chunkRows: 1 });
      text += w.rows(chunks);
      if (chunks.reduce((n, c) => n + c.rows, 0) < 2) break;
      after = chunks[chunks.length - 1].last;
    }
    expect(text).toBe(await inJavaScript(device.id, range.until));
  });
});
