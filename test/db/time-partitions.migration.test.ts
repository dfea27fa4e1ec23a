import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { deliveryKit } from '../workers/helpers.js';
import * as m036 from '../../db/migrations/036_time_partitions.js';
import { listPartitions } from '../../db/partitions.js';
import { TIME_TABLES } from '../../db/retention/time-tables.js';
import { insertMessages, messageRow, storedMessages } from '../helpers/telemetry.factory.js';
import { uuid7 } from '../../lib/uuid7.js';

let t: TestApp;
beforeAll(async () => { t = await buildTestApp(); });
afterAll(async () => { await t?.close(); });
const kit = deliveryKit(() => t);

const partitioned = async () => (await t.db.knex.raw(`SELECT c.relname FROM pg_partitioned_table p JOIN pg_class c ON c.oid = p.partrelid
  ORDER BY 1`)).rows.map((r: { relname: string }) => r.relname);

describe('the append-only tables partitioned by time (migration 036)', () => {
  it('partitions messages and the logs by range of their time column', async () => {
    const { rows } = await t.db.knex.raw(`SELECT c.relname AS t, pg_get_partkeydef(c.oid) AS key FROM pg_partitioned_table p
      JOIN pg_class c ON c.oid = p.partrelid`);
    const keys = Object.fromEntries(rows.map((r: { t: string; key: string }) => [r.t, r.key]));
    expect(keys).toEqual({ messages: 'RANGE (ts)', transactions: 'RANGE (ts)', notifications: 'RANGE (created_at)',
      notification_attempts: 'RANGE (notified_at)', dead_letters: 'RANGE (received_at)' });
  });

  it('keeps every row of a database from before, in partitions covering their times, and goes down and up again', async () => {
    const { app, device, subscription } = await kit.subscribed('http://127.0.0.1:9/r');
    const [event] = await kit.fire([{ deviceId: device.id }]);
    await t.repos.transactions.flush(); // the API's buffered log lines, so that none lands between the counts
    await m036.down(t.db.knex);
    expect(await partitioned()).toEqual([]);

    // rows as the plain tables held them: messages over three months, the logs of as many times
    const times = ['2025-10-31T23:59:59.999Z', '2025-11-01T00:00:00.000Z', '2026-01-15T12:00:00.000Z'];
    const messages = times.map((ts, i) => ({ id: uuid7(Date.parse(ts)), deviceId: device.id, ts: new Date(ts),
      data: { rpm: 800 + i, location: { type: 'Point', coordinates: [-96.8, 32.78] } } }));
    await t.db.knex('messages').insert(messages.map((m) => messageRow(t.db.knex, m)));
    for (const ts of times) {
      await t.db.knex('transactions').insert({ id: randomUUID(), application_id: app.id, ts, path: '/x', status_code: 200, method: 'GET', service: 'platform' });
      await t.db.knex('dead_letters').insert({ device_id: device.id, topic: 't', reason: 'r', received_at: ts });
    }
    const [notification] = await t.db.knex('notifications').where({ event_id: event.id }).pluck('id');
    await t.db.knex('notification_attempts').insert({ notification_id: notification, attempt: 1, outcome: 'error', notified_at: times[0] });
    const counts = async () => Object.fromEntries(await Promise.all(TIME_TABLES.map(async (s) =>
      [s.table, Number((await t.db.knex(s.table).count({ n: '*' }))[0].n)])));
    const before = await counts();
    const stored = await storedMessages(t.db.knex).where('device_id', device.id).orderBy('ts');

    await m036.up(t.db.knex);
    expect(await partitioned()).toEqual(expect.arrayContaining(TIME_TABLES.map((s) => s.table)));
    expect(await counts()).toEqual(before);
    expect(await storedMessages(t.db.knex).where('device_id', device.id).orderBy('ts')).toEqual(stored);
    const days = (await listPartitions(t.db.knex, TIME_TABLES[0])).map((p) => p.name);
    expect(days).toEqual(expect.arrayContaining(['messages_p20251031', 'messages_p20251101', 'messages_p20260115']));
    const months = (await listPartitions(t.db.knex, TIME_TABLES.find((s) => s.table === 'dead_letters')!)).map((p) => p.name);
    expect(months).toEqual(expect.arrayContaining(['dead_letters_p202510', 'dead_letters_p202511', 'dead_letters_p202601']));

    // what the API reads of them is as before
    const res = await t.get(`/api/v1/devices/${device.id}/messages/${messages[1].id}`, app.auth);
    expect(res.statusCode).toBe(200);
    expect(res.json().message.data).toEqual({ rpm: 801, location: { type: 'Point', coordinates: [-96.8, 32.78] } });
    expect((await t.get(`/api/v1/subscriptions/${subscription.id}/notifications?until=2030-01-01`, app.auth)).json().notifications).toHaveLength(1);

    // the message counts, per device and day, follow inserts and deletes through the partitioned table's triggers
    const n = async () => Number((await t.db.knex('device_message_counts').where({ device_id: device.id }).sum({ n: 'n' }))[0].n ?? 0);
    const counted = await n();
    expect(counted).toBe(3);
    await insertMessages(t.db.knex, [{ deviceId: device.id, ts: '2026-02-01T00:00:00Z' }]);
    expect(await n()).toBe(counted + 1);
    await t.db.knex('messages').where({ device_id: device.id }).where('ts', '<', '2025-11-01').del();
    expect(await n()).toBe(counted);
  });
});
