import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import type { MessageRow } from '../../db/repositories/ingest.repository.js';
import { frameUuid, uuid7 } from '../../lib/uuid7.js';
import { MESSAGE_TOTALS, messageTotalsBindings } from '../../db/repositories/telemetry.repository.js';
import { isTable, partitionsFor } from '../helpers/partitions.js';

let t: TestApp;
beforeAll(async () => { t = await buildTestApp(); });
afterAll(async () => { await t?.close(); });

const row = (deviceId: string, k: number, frameId: string | null): MessageRow => ({
  id: frameId === null ? uuid7(Date.UTC(2024, 0, 1, 0, 0, k)) : frameUuid(Date.UTC(2024, 0, 1, 0, 0, k), deviceId, frameId), deviceId,
  timestamp: new Date(Date.UTC(2024, 0, 1, 0, 0, k)), kind: 'telemetry', data: { rpm: 900 + k },
  lon: null, lat: null, extra: null, receivedAt: new Date(),
});

describe('device_message_counts (migration 013)', () => {
  it('follows every insert and delete of messages, counting a re-sent frame once', async () => {
    const app = await t.make.application('enterprise');
    const [a, b] = [await t.make.device(app.principal), await t.make.device(app.principal)];
    const counts = async () => Object.fromEntries((await t.db.knex('device_message_counts').whereIn('device_id', [a.id, b.id])
      .select('device_id', 'n')).map((r: any) => [r.device_id, Number(r.n)]));
    const stored = async (id: string) => Number((await t.db.knex('messages').where({ device_id: id }).count({ n: '*' }))[0].n);

    await t.repos.ingest.insertMessages([row(a.id, 0, 'f0'), row(a.id, 1, 'f1'), row(b.id, 0, null)]);
    expect(await counts()).toEqual({ [a.id]: 2, [b.id]: 1 });
    // f1 again (a re-sent frame, skipped by ON CONFLICT) and a new one
    await t.repos.ingest.insertMessages([row(a.id, 1, 'f1'), row(a.id, 2, 'f2')]);
    expect(await counts()).toEqual({ [a.id]: 3, [b.id]: 1 });
    await t.db.knex('messages').where({ device_id: a.id, id: row(a.id, 0, 'f0').id }).del();
    expect(await counts()).toEqual({ [a.id]: 2, [b.id]: 1 });
    expect(await stored(a.id)).toBe(2);
    await t.db.knex('devices').where({ id: b.id }).del();
    expect(await counts()).toEqual({ [a.id]: 2 });
    expect(await stored(b.id)).toBe(0);
  });

  it('refuses messages of a device that does not exist, though messages check no key per row (migration 014)', async () => {
    const ghost = randomUUID();
    await expect(t.repos.ingest.insertMessages([row(ghost, 0, 'g0'), row(ghost, 1, 'g1')])).rejects.toThrow(/device_message_counts_device_id_fkey/);
    expect(Number((await t.db.knex('messages').where({ device_id: ghost }).count({ n: '*' }))[0].n)).toBe(0);
  });
});

describe('the remaining of a device\'s first message pages', () => {
  it('reads only the device\'s messages newer than the page\'s until, when other devices\' messages are newer', { timeout: 60_000 }, async () => {
    // the planner does not know that a device's messages and their timestamps go together: with most of the
    // table newer than the prior link (other devices), it took `ts > $` as a third of the device's rows
    const app = await t.make.application('enterprise');
    const [device, other] = [await t.make.device(app.principal), await t.make.device(app.principal)];
    const seed = (id: string, from: string, n: number) => t.db.knex.raw(`INSERT INTO messages (id, device_id, ts, received_at)
      SELECT message_uuid(x.ts), ?, x.ts, now() FROM (SELECT ?::timestamptz + make_interval(secs => i) AS ts
      FROM generate_series(0, ?) i) x`, [id, from, n - 1]);
    await partitionsFor(t.db.knex, 'messages', '2024-07-01T00:00:00Z', '2024-07-03T00:00:00Z');
    await seed(device.id, '2024-07-01T00:00:00Z', 30_000);
    await seed(other.id, '2024-07-02T00:00:00Z', 60_000);
    await t.db.knex.raw('ANALYZE messages');
    // the count of a page's totals, for an `until` that 20 of the device's messages are newer than; as the API binds it
    const { rows } = await t.db.knex.raw(`EXPLAIN (ANALYZE, FORMAT JSON) SELECT ${MESSAGE_TOTALS}`,
      messageTotalsBindings(device.id, new Date('2024-07-01T08:19:39.999Z')));
    const out = rows[0]['QUERY PLAN'];
    const reads: number[] = [];
    const walk = (n: any) => {
      if (isTable(n['Relation Name'], 'messages')) reads.push(n['Actual Rows'] + (n['Rows Removed by Filter'] ?? 0));
      for (const c of n.Plans ?? []) walk(c);
    };
    walk((typeof out === 'string' ? JSON.parse(out) : out)[0].Plan);
    // each day's partition is probed; only the page's has rows
    expect(reads.filter((n) => n > 0)).toEqual([20]);
  });
});
