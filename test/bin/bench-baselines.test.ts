// The bench's storing floor: a bare Aedes that acknowledges a QoS 1 frame only once its payload is
// committed in a copy of `messages`, and the raw COPY, on the suite's database (PGlite, or PostgreSQL in CI's second
// phase) with a real MQTT client and the real load generator.
import { randomUUID } from 'node:crypto';
import mqtt from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bareAedes, rawCopy, startStoringAedes, storingAedes } from '../../bench/baselines.js';
import { startProcessMonitor } from '../../bench/processes.js';
import { createTestDb } from '../helpers/db.js';

describe('bench baselines: the storing floor and the raw COPY', { timeout: 60_000 }, () => {
  let db: Awaited<ReturnType<typeof createTestDb>>;
  beforeAll(async () => { db = await createTestDb(); });
  afterAll(async () => { await db?.close(); });
  const target = () => ({ databaseUrl: db.url, knex: db.knex });

  it('acknowledges a QoS 1 frame only once its payload is committed as a row, and stores no QoS 0 frame', async () => {
    const storing = await startStoringAedes(target());
    const deviceId = randomUUID();
    const client = await mqtt.connectAsync(storing.url, { clientId: deviceId, reconnectPeriod: 0 });
    try {
      const stored = async (n: number) =>
        (await db.knex(storing.table).where('device_id', deviceId).where('payload', '@>', JSON.stringify({ n })).count({ c: '*' }))[0].c;
      // each frame is there as soon as its PUBACK is: published together, so that batches form
      const acked = await Promise.all(Array.from({ length: 30 }, async (_, n) => {
        await client.publishAsync(`devices/${deviceId}/frames`, JSON.stringify({ n, note: 'a \\ backslash' }), { qos: 1 });
        return Number(await stored(n));
      }));
      expect(acked).toEqual(new Array(30).fill(1));
      const row = await db.knex(storing.table).where('payload', '@>', JSON.stringify({ n: 7 })).first();
      expect(row).toMatchObject({ device_id: deviceId, payload: { n: 7, note: 'a \\ backslash' }, location: null });
      expect(storing.meanBatchRows()).toBeGreaterThanOrEqual(1);

      await client.publishAsync(`devices/${deviceId}/frames`, JSON.stringify({ n: 100 }), { qos: 0 });
      await client.publishAsync(`devices/${deviceId}/frames`, JSON.stringify({ n: 101 }), { qos: 1 });
      expect(Number(await stored(101))).toBe(1);
      expect(Number(await stored(100))).toBe(0);
    } finally {
      await client.endAsync();
      await storing.close();
    }
    // its table goes with it
    expect(await db.knex.schema.hasTable(storing.table)).toBe(false);
  });

  it('measures the load generator against it, as a ratio to bare Aedes under the same load', async () => {
    const load = { devices: Array.from({ length: 4 }, () => ({ id: randomUUID(), secret: 'x' })), durationMs: 1000, warmupMs: 200, window: 2, rate: 0 };
    const bare = await bareAedes(load);
    const monitor = await startProcessMonitor({ databaseUrl: db.url });
    const floor = await storingAedes(load, target(), bare, monitor).finally(() => monitor.close());
    expect(floor.framesPerSecond).toBeGreaterThan(0);
    expect(floor.ratioToBareAedes).toBeCloseTo(floor.framesPerSecond / bare.framesPerSecond, 1);
    expect(floor.meanBatchRows).toBeGreaterThanOrEqual(1);
    expect(floor.meanBatchRows).toBeLessThanOrEqual(500);
    expect(floor.publishToAckMs.p99).toBeGreaterThanOrEqual(floor.publishToAckMs.p50);
    // its CPU over its measured window, as a scenario's: the bench process's, the load generator's, and on a local
    // PostgreSQL the backends' that did its COPYs
    expect(floor.processes?.platform.cpuUserSeconds).toBeGreaterThan(0);
    expect(floor.processes?.loadGenerator).toMatchObject({ where: 'worker thread' });
    if (db.url) expect(floor.processes?.postgres.cpuUserSeconds).toBeGreaterThan(0);
  });

  it('copies every raw row on either database, in batches, and leaves no table behind', async () => {
    const before = await db.knex.raw(`SELECT count(*)::int AS n FROM pg_tables WHERE tablename LIKE 'bench_copy_%'`);
    const copy = await rawCopy(target(), 1200, 500);
    expect(copy.rows).toBe(1200); // 500 + 500 + 200
    expect(copy.rowsPerSecond).toBeGreaterThan(0);
    const after = await db.knex.raw(`SELECT count(*)::int AS n FROM pg_tables WHERE tablename LIKE 'bench_copy_%'`);
    expect((after.rows ?? after)[0].n).toBe((before.rows ?? before)[0].n);
  });
});
