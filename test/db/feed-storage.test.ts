import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import * as m026 from '../../db/migrations/026_feed_storage.js';
import { hasLz4 } from '../../db/migrations/column-compression.js';
import { recordFeedBatch } from '../../db/message-feed.js';

let t: TestApp;
beforeAll(async () => { t = await buildTestApp(); });
afterAll(async () => { await t?.close(); });

/** How message_feed keeps its two arrays: storage (x extended, e external) and compression ('' default, l lz4). */
const storage = async () => Object.fromEntries((await t.db.knex.raw(`SELECT attname, attstorage, attcompression FROM pg_attribute
  WHERE attrelid = 'message_feed'::regclass AND attname IN ('message_ids', 'device_ids')`)).rows
  .map((r: any) => [r.attname, `${r.attstorage}${r.attcompression ? `/${r.attcompression}` : ''}`]));

describe('message_feed storage (migration 026)', () => {
  it('keeps message ids uncompressed, device ids compressed (lz4 where the server has it), and goes down and up', async () => {
    const lz4 = await hasLz4(t.db.knex);
    const migrated = { message_ids: 'e', device_ids: lz4 ? 'x/l' : 'x' };
    expect(await storage()).toEqual(migrated);
    await m026.down(t.db.knex);
    expect(await storage()).toEqual({ message_ids: 'x', device_ids: 'x' });
    await m026.up(t.db.knex);
    expect(await storage()).toEqual(migrated);
  });

  it('stores and reads back a batch\'s ids whole, past the 2 KB of an inline value', async () => {
    const app = await t.make.application('enterprise');
    const device = await t.make.device(app.principal);
    const messages = Array.from({ length: 500 }, () => ({ id: randomUUID(), deviceId: device.id }));
    await t.db.knex.transaction((trx) => recordFeedBatch(trx, messages));
    const [row] = (await t.db.knex.raw(`SELECT message_ids::text[] AS m, device_ids::text[] AS d, pg_column_size(device_ids) AS dsize
      FROM message_feed ORDER BY seq DESC LIMIT 1`)).rows;
    expect(row.m).toEqual(messages.map((m) => m.id));
    expect(row.d).toEqual(messages.map((m) => m.deviceId));
    // one device's id 500 times: compressed far below its 8 KB
    expect(row.dsize).toBeLessThan(2048);
  });
});
