import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import type { MessageRow } from '../../db/repositories/ingest.repository.js';

let t: TestApp;
beforeAll(async () => { t = await buildTestApp(); });
afterAll(async () => { await t?.close(); });

describe('the batch insert (db/repositories/ingest.repository.ts)', () => {
  it('stores every column of every row as sent, each row\'s data and extra with their own row', async () => {
    const app = await t.make.application('enterprise');
    const [a, b] = [await t.make.device(app.principal), await t.make.device(app.principal)];
    // frame ids with what array literals and JSON treat specially; data and extra that differ per row
    const frameIds = ['plain', 'NULL', 'a"b', 'back\\slash', 'comma,brace{}', ' spaced ', 'ünï😀', null, ''];
    const receivedAt = [new Date('2025-03-01T10:00:00.123Z'), new Date('2025-03-01T10:00:01.456Z')];
    const rows: MessageRow[] = frameIds.map((frameId, k) => ({
      id: randomUUID(), deviceId: k % 2 ? b.id : a.id, timestamp: new Date(Date.UTC(2025, 2, 1, 9, 0, k, k)), frameId,
      kind: k === 3 ? 'startup' : 'telemetry',
      data: { rpm: 800 + k, note: `row ${k} "quoted" \\ ${'é'.repeat(k)}`, nested: { k, list: [k, null, true] } },
      lon: k === 4 ? null : -96.8 + k / 1000, lat: k === 4 ? null : 32.77 + k / 1e7,
      extra: k % 3 ? null : { vin: `VIN${k}`, gps: { speed: k } }, receivedAt: receivedAt[k < 5 ? 0 : 1],
    }));
    const stored = await t.repos.ingest.insertMessages(rows);
    expect([...stored.inserted.keys()].sort()).toEqual(rows.map((r) => r.id).sort());

    const got = new Map((await t.db.knex('messages').whereIn('id', rows.map((r) => r.id))
      .select('id', 'device_id', 'ts', 'frame_id', 'kind', 'data', 'extra', 'received_at',
        t.db.knex.raw('ST_X(location) AS lon'), t.db.knex.raw('ST_Y(location) AS lat'))).map((r: any) => [r.id, r]));
    for (const r of rows) {
      const s = got.get(r.id);
      expect(s, r.id).toBeDefined();
      expect({
        device: s.device_id, ts: new Date(s.ts).toISOString(), frame: s.frame_id, kind: s.kind, data: s.data,
        extra: s.extra, received: new Date(s.received_at).toISOString(), lon: s.lon, lat: s.lat,
      }).toEqual({
        device: r.deviceId, ts: r.timestamp.toISOString(), frame: r.frameId, kind: r.kind, data: r.data,
        extra: r.extra, received: r.receivedAt.toISOString(), lon: r.lon, lat: r.lat,
      });
    }
    // a row without extra stores SQL NULL, not JSON null
    const nulls = await t.db.knex('messages').whereIn('id', rows.map((r) => r.id)).whereNull('extra').count({ n: '*' });
    expect(Number(nulls[0].n)).toBe(rows.filter((r) => r.extra === null).length);
  });
});
