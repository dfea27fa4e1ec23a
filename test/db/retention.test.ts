import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { deviceOnVehicle, longDrive } from './trips.fixtures.js';
import { insertMessages } from '../helpers/telemetry.factory.js';
import { expire, storageMetrics, storageOf } from '../../db/retention/expiry.js';
import { listPartitions } from '../../db/partitions.js';
import { DEAD_LETTER_PARTITIONS, MESSAGE_PARTITIONS, TRANSACTION_PARTITIONS } from '../../db/retention/time-tables.js';
import { partitionsFor } from '../helpers/partitions.js';

let t: TestApp;
beforeAll(async () => { t = await buildTestApp(); });
afterAll(async () => { await t?.close(); });

const DAY = 86_400_000;
const KEEP_ALL = { telemetry: null, transactions: null, notifications: null, deadLetters: null };
const names = async (spec = MESSAGE_PARTITIONS) => (await listPartitions(t.db.knex, spec)).map((p) => p.name);
const count = async (deviceId: string) => Number((await t.db.knex('messages').where({ device_id: deviceId }).count({ n: '*' }))[0].n);
const total = async (deviceId: string) => Number((await t.db.knex('device_message_counts').where({ device_id: deviceId }).sum({ n: 'n' }))[0].n ?? 0);

describe('telemetry retention', () => {
  it('drops the days older than the retention whole, keeps today, and the trips of the expired days still answer', async () => {
    const { app, device } = await deviceOnVehicle(t);
    await longDrive(t, device.id, 0, 120); // a trip far older than 30 days
    const now = new Date();
    await insertMessages(t.db.knex, [
      { deviceId: device.id, ts: new Date(now.getTime() - 40 * DAY), data: { rpm: 900 } },
      { deviceId: device.id, ts: new Date(now.getTime() - 60_000), data: { rpm: 1000 } },
    ]);
    const [trip] = (await t.get(`/api/v1/devices/${device.id}/trips?until=${now.getTime()}`, app.auth)).json().trips;
    expect(trip.stats.distance).toBeGreaterThan(1000);
    const before = (await t.get(`/api/v1/trips/${trip.id}`, app.auth)).json().trip;
    expect((await t.get(before.links.messages, app.auth)).json().messages.length).toBeGreaterThan(0);
    expect(await count(device.id)).toBe(122);
    expect(await total(device.id)).toBe(122);

    const dry = await expire(t.db.knex, { ...KEEP_ALL, telemetry: 30 }, { now, dryRun: true });
    expect(dry.dropped.map((d) => d.name)).toEqual(expect.arrayContaining(['messages_p20260115']));
    expect(await count(device.id)).toBe(122);

    const report = await expire(t.db.knex, { ...KEEP_ALL, telemetry: 30 }, { now });
    const fortyDays = `messages_p${new Date(now.getTime() - 40 * DAY).toISOString().slice(0, 10).replaceAll('-', '')}`;
    expect(report.dropped.map((d) => d.name)).toEqual(expect.arrayContaining(['messages_p20260115', fortyDays]));
    expect(report.dropped.find((d) => d.name === fortyDays)).toMatchObject({ table: 'messages', rows: 1 });
    for (const d of report.dropped) expect(d.to.getTime()).toBeLessThanOrEqual(now.getTime() - 30 * DAY);
    expect(await names()).not.toContain(fortyDays);
    // today is untouched, and the counts follow the dropped days
    expect(await count(device.id)).toBe(1);
    expect(await total(device.id)).toBe(1);
    const page = (await t.get(`/api/v1/devices/${device.id}/messages?limit=5`, app.auth)).json();
    expect(page.messages.map((m: any) => m.data.rpm)).toEqual([1000]);
    expect(page.meta.pagination.remaining).toBe(0);

    // the trip keeps its statistics and preview; its messages link answers an empty page
    const after = (await t.get(`/api/v1/trips/${trip.id}`, app.auth)).json().trip;
    expect(after.stats).toEqual(before.stats);
    expect(after.preview).toEqual(before.preview);
    const messages = await t.get(after.links.messages, app.auth);
    expect(messages.statusCode).toBe(200);
    expect(messages.json().messages).toEqual([]);

    // a second pass has nothing left to drop
    expect((await expire(t.db.knex, { ...KEEP_ALL, telemetry: 30 }, { now })).dropped).toEqual([]);
  });

  it('keeps everything without a retention, and makes the partitions of the days ahead', async () => {
    const now = new Date();
    await partitionsFor(t.db.knex, 'messages', new Date(now.getTime() - 400 * DAY));
    const report = await expire(t.db.knex, KEEP_ALL, { now: new Date(now.getTime() + 10 * DAY) });
    expect(report.dropped).toEqual([]);
    expect(await names()).toContain(`messages_p${new Date(now.getTime() - 400 * DAY).toISOString().slice(0, 10).replaceAll('-', '')}`);
    expect(report.created).toContain(`messages_p${new Date(now.getTime() + 13 * DAY).toISOString().slice(0, 10).replaceAll('-', '')}`);
  });
});

describe('log retention', () => {
  it('drops the months of the transaction log and the dead letters wholly older than their retention', async () => {
    const app = await t.make.application();
    const now = new Date('2026-12-07T12:00:00Z');
    for (const ts of ['2026-09-15T00:00:00Z', '2026-11-20T00:00:00Z']) {
      await partitionsFor(t.db.knex, 'transactions', ts);
      await t.db.knex('transactions').insert({ id: randomUUID(), application_id: app.id, ts, path: '/x', status_code: 200, method: 'GET', service: 'platform' });
      await partitionsFor(t.db.knex, 'dead_letters', ts);
      await t.db.knex('dead_letters').insert({ topic: 't', reason: 'r', received_at: ts });
    }
    // 30 days: September ended more than 30 days ago, November did not
    const report = await expire(t.db.knex, { ...KEEP_ALL, transactions: 30, deadLetters: 30 }, { now });
    expect(report.dropped.map((d) => d.name)).toEqual(expect.arrayContaining(['transactions_p202609', 'dead_letters_p202609']));
    expect(await names(TRANSACTION_PARTITIONS)).not.toContain('transactions_p202609');
    expect(await names(TRANSACTION_PARTITIONS)).toContain('transactions_p202611');
    expect(await names(DEAD_LETTER_PARTITIONS)).toContain('dead_letters_p202611');
    expect(Number((await t.db.knex('transactions').where({ application_id: app.id }).count({ n: '*' }))[0].n)).toBe(1);
  });
});

describe('storage of the time-partitioned tables', () => {
  it('reports bytes, partitions and the oldest retained time per table, as metrics too', async () => {
    const device = (await t.make.device((await t.make.application()).principal)).id;
    await insertMessages(t.db.knex, [{ deviceId: device, ts: '2025-03-03T10:00:00Z' }]);
    const storage = await storageOf(t.db.knex);
    const messages = storage.find((s) => s.table === 'messages')!;
    expect(messages.bytes).toBeGreaterThan(0);
    expect(messages.retainedSince).toEqual(new Date('2025-03-03T00:00:00Z'));
    const text = storageMetrics(storage);
    expect(text).toContain(`drivewire_table_retained_since_seconds{table="messages"} ${Date.parse('2025-03-03T00:00:00Z') / 1000}`);
    expect(text).toMatch(/drivewire_table_bytes\{table="transactions"\} \d+/);
  });
});
