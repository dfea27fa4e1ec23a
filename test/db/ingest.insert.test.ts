import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { DEAD_LETTER_RAW_BYTES, DEAD_LETTER_REASON_LENGTH, type MessageRow } from '../../db/repositories/ingest.repository.js';
import { frameUuid, uuid7 } from '../../lib/uuid7.js';
import { messageData, numAt } from '../../db/message-data.sql.js';

let t: TestApp;
beforeAll(async () => { t = await buildTestApp(); });
afterAll(async () => { await t?.close(); });

describe('the batch insert (db/repositories/ingest.repository.ts)', () => {
  it('stores every column of every row as sent, each row\'s data, GPS extras and extra with their own row', async () => {
    const app = await t.make.application('enterprise');
    const [a, b] = [await t.make.device(app.principal), await t.make.device(app.principal)];
    // frame ids with what array literals and JSON treat specially; data and extra that differ per row
    const frameIds = ['plain', 'NULL', 'a"b', 'back\\slash', 'comma,brace{}', ' spaced ', 'ünï😀', null, ''];
    const receivedAt = [new Date('2025-03-01T10:00:00.123Z'), new Date('2025-03-01T10:00:01.456Z')];
    const rows: MessageRow[] = frameIds.map((frameId, k) => {
      const timestamp = new Date(Date.UTC(2025, 2, 1, 9, 0, k, k));
      const deviceId = k % 2 ? b.id : a.id;
      return {
        id: frameId === null ? uuid7(timestamp.getTime()) : frameUuid(timestamp.getTime(), deviceId, frameId), deviceId, timestamp,
        kind: k === 3 ? 'startup' : 'telemetry',
        data: { rpm: 800 + k, note: `row ${k} "quoted" \\ ${'é'.repeat(k)}`, nested: { k, list: [k, null, true] },
          ...(k === 2 ? { accel: { maxX: 0.5, minZ: 9.1 } } : {}) },
        gps: k % 3 ? null : { speed: k, heading: 90 }, lon: k === 4 ? null : -96.8 + k / 1000, lat: k === 4 ? null : 32.77 + k / 1e7,
        extra: k % 3 ? null : { vin: `VIN${k}` }, receivedAt: receivedAt[k < 5 ? 0 : 1],
      };
    });
    const stored = await t.repos.ingest.insertMessages(rows);
    expect([...stored.inserted.keys()].sort()).toEqual(rows.map((r) => r.id).sort());

    const got = new Map((await t.db.knex('messages').whereIn('id', rows.map((r) => r.id))
      .select('id', 'device_id', 'ts', 'kind', t.db.knex.raw(`${messageData('messages')} AS data`), 'extra', 'received_at',
        t.db.knex.raw(`${numAt('messages', 'gps.speed')} AS gps_speed`),
        t.db.knex.raw('ST_X(location) AS lon'), t.db.knex.raw('ST_Y(location) AS lat'))).map((r: any) => [r.id, r]));
    for (const r of rows) {
      const s = got.get(r.id);
      expect(s, r.id).toBeDefined();
      expect({
        device: s.device_id, ts: new Date(s.ts).toISOString(), kind: s.kind ?? 'telemetry', data: s.data,
        extra: s.extra, gpsSpeed: s.gps_speed, received: new Date(s.received_at).toISOString(), lon: s.lon, lat: s.lat,
      }).toEqual({
        device: r.deviceId, ts: r.timestamp.toISOString(), kind: r.kind,
        data: { ...r.data, ...(r.lon === null ? {} : { location: { type: 'Point', coordinates: [r.lon, r.lat] } }) },
        extra: r.extra, gpsSpeed: r.gps?.speed ?? null, received: r.receivedAt.toISOString(), lon: r.lon, lat: r.lat,
      });
    }
    // a row without extra stores SQL NULL, not JSON null
    const nulls = await t.db.knex('messages').whereIn('id', rows.map((r) => r.id)).whereNull('extra').count({ n: '*' });
    expect(Number(nulls[0].n)).toBe(rows.filter((r) => r.extra === null).length);
  });

  it('returns each stored row\'s step under its own id, leaves out re-sent frames, and gives the devices\' newest before', async () => {
    const app = await t.make.application('enterprise');
    const [a, b] = [await t.make.device(app.principal), await t.make.device(app.principal)];
    const row = (deviceId: string, k: number, frameId: string): MessageRow => ({
      id: frameUuid(Date.UTC(2025, 4, 1, 9, 0, k), deviceId, frameId), deviceId, timestamp: new Date(Date.UTC(2025, 4, 1, 9, 0, k)), kind: 'telemetry',
      data: { vehicleSpeed: 30 }, lon: -96.8 + k / 10000, lat: 32.77, extra: null, receivedAt: new Date(Date.UTC(2025, 4, 1, 9, 1)),
    });
    const first = [row(a.id, 0, 'f0'), row(a.id, 1, 'f1')];
    await t.repos.ingest.insertMessages(first);
    // the re-sent f1 stands between rows that are stored: the positions after it must still find their own rows
    const second = [row(b.id, 0, 'g0'), row(a.id, 1, 'f1'), row(a.id, 2, 'f2'), row(b.id, 1, 'g1')];
    const stored = await t.repos.ingest.insertMessages(second);
    expect([...stored.inserted.keys()].sort()).toEqual([second[0].id, second[2].id, second[3].id].sort());
    const columns = new Map((await t.db.knex('messages').whereIn('id', [...stored.inserted.keys()])
      .select('id', 'step_m', 'step_source', 'step_vehicle_id')).map((r: any) => [r.id, r]));
    for (const [id, step] of stored.inserted) {
      const c = columns.get(id);
      expect(step, id).toEqual({ meters: Number(c.step_m), source: c.step_source, vehicleId: c.step_vehicle_id });
    }
    expect(stored.inserted.get(second[2].id)).toMatchObject({ source: 'gps' });
    expect(stored.inserted.get(second[2].id)!.meters).toBeGreaterThan(9);
    expect(stored.inserted.get(second[0].id)).toMatchObject({ meters: 0, source: 'none' });
    expect([...stored.latest]).toEqual([[a.id, first[1].timestamp]]);
  });

  it('reads each device\'s newest message from a hint on, and from the whole history when the hint is stale or wrong', async () => {
    const app = await t.make.application('enterprise');
    const device = await t.make.device(app.principal);
    const rows = [0, 1, 2].map((k): MessageRow => ({
      id: uuid7(Date.UTC(2025, 5, 1, 9, 0, k)), deviceId: device.id, timestamp: new Date(Date.UTC(2025, 5, 1, 9, 0, k)), kind: 'telemetry',
      data: {}, lon: null, lat: null, extra: null, receivedAt: new Date(Date.UTC(2025, 5, 1, 9, 1)),
    }));
    await t.repos.ingest.insertMessages(rows);
    const newest = rows[2].timestamp;
    const latest = (hint?: { ts: Date; id: string }) => t.repos.ingest.latestTimestamps([device.id], t.db.knex, [hint]).then((m) => m.get(device.id));
    expect(await latest()).toEqual(newest);
    expect(await latest({ ts: rows[2].timestamp, id: rows[2].id })).toEqual(newest); // the newest itself
    expect(await latest({ ts: rows[0].timestamp, id: rows[0].id })).toEqual(newest); // stale: messages stored after it
    // newer than every message (as after a deletion), or an id never stored: the whole history
    expect(await latest({ ts: new Date(Date.UTC(2025, 5, 2)), id: randomUUID() })).toEqual(newest);
    expect(await latest({ ts: rows[2].timestamp, id: 'ffffffff-ffff-4fff-bfff-ffffffffffff' })).toEqual(newest);
  });

  it('stores numbers at their slots and every other value in txt, and reads data back as it was sent', async () => {
    const app = await t.make.application('enterprise');
    const device = await t.make.device(app.principal);
    const speeds: unknown[] = [42.5, 0, 'fast', undefined];
    const rows = speeds.map((vehicleSpeed, k): MessageRow => ({
      id: uuid7(Date.UTC(2025, 6, 1, 9, 0, k)), deviceId: device.id, timestamp: new Date(Date.UTC(2025, 6, 1, 9, 0, k)), kind: 'telemetry',
      data: vehicleSpeed === undefined ? { rpm: 900, fuelType: 'Diesel' } : { vehicleSpeed }, lon: null, lat: null, extra: null, receivedAt: new Date(),
    }));
    await t.repos.ingest.insertMessages(rows);
    const stored = await t.db.knex('messages').whereIn('id', rows.map((r) => r.id)).orderBy('ts')
      .select(t.db.knex.raw(`${numAt('messages', 'vehicleSpeed')} AS speed`), 'txt', t.db.knex.raw(`${messageData('messages')} AS data`));
    expect(stored.map((r: any) => r.speed)).toEqual([42.5, 0, null, null]);
    expect(stored.map((r: any) => r.txt)).toEqual([null, null, { vehicleSpeed: 'fast' }, { fuelType: 'Diesel' }]);
    expect(stored.map((r: any) => r.data)).toEqual(rows.map((r) => r.data));
  });
});

describe('dead letters (db/repositories/ingest.repository.ts)', () => {
  it('keeps at most DEAD_LETTER_RAW_BYTES of a frame, marked as cut, and a reason of one bounded line', async () => {
    const d = await t.make.device();
    const raw = Buffer.from(JSON.stringify({ ts: 1, data: { fuelType: 'y'.repeat(300_000) } }));
    const reason = `frame 0: first line\n  second\tline ${'z'.repeat(5000)}`;
    await t.repos.ingest.insertDeadLetters([
      { deviceId: d.id, topic: `devices/${d.id}/frames`, frameIndex: 0, reason, raw, receivedAt: new Date() },
      { deviceId: d.id, topic: `devices/${d.id}/frames`, frameIndex: 1, reason: 'short', raw: Buffer.from('{"a":1}'), receivedAt: new Date() },
    ]);
    const [small, big] = await t.repos.ingest.deadLetters(d.id);
    expect([small.reason, small.raw!.toString()]).toEqual(['short', '{"a":1}']);
    const marker = `…[cut: ${raw.length} bytes]`;
    expect(big.raw!.length).toBe(DEAD_LETTER_RAW_BYTES);
    expect(big.raw!.toString('utf8')).toBe(raw.subarray(0, DEAD_LETTER_RAW_BYTES - Buffer.byteLength(marker)).toString('utf8') + marker);
    expect(big.reason).toHaveLength(DEAD_LETTER_REASON_LENGTH);
    expect(big.reason.startsWith('frame 0: first line second line zzz')).toBe(true);
    expect(big.reason.endsWith('…')).toBe(true);
  });
});
