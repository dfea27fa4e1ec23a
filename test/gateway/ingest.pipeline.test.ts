import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBus, type StoredEvent, type StoredMessage } from '../../lib/bus.js';
import { silentLogger } from '../../lib/logger.js';
import { repositories } from '../../db/index.js';
import { createIngestPipeline, laneIndex, type IngestJob } from '../../gateway/ingest.pipeline.js';
import { createGatewayMetrics } from '../../gateway/metrics.js';
import { uplinkJob } from '../../gateway/uplink.js';
import type { DeviceBatch, IngestStage } from '../../gateway/ingest.types.js';
import { createTestDb } from '../helpers/db.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { recordStatements } from '../helpers/statements.js';
import { createMessageFeed, feedFollowed } from '../../db/message-feed.js';
import { tripsStage } from '../../gateway/stages/trips.stage.js';
import { distanceStage } from '../../gateway/stages/distance.stage.js';
import { vehiclesStage } from '../../gateway/stages/vehicles.stage.js';
import { rulesStage } from '../../gateway/stages/rules.stage.js';
import { createRule } from '../db/rules.fixtures.js';
import { randomUUID } from 'node:crypto';
import { storedMessages } from '../helpers/telemetry.factory.js';
import { frameUuid } from '../../lib/uuid7.js';
import { forgetPartitions, listPartitions } from '../../db/partitions.js';
import { MESSAGE_PARTITIONS } from '../../db/retention/time-tables.js';

let t: TestApp;
beforeAll(async () => { t = await buildTestApp(); });
afterAll(async () => { await t?.close(); });

const BASE = Date.now() - 60_000;
const at = (s: number) => new Date(BASE + s * 1000);
const job = (deviceId: string, frames: unknown) =>
  uplinkJob(deviceId, `devices/${deviceId}/frames`, Buffer.from(JSON.stringify(frames)), 262144).job;

/** A pipeline over the test database whose stages record what they see. */
function pipeline(opts: {
  batchSize?: number; batchMs?: number; stages?: IngestStage[]; knex?: TestApp['db']['knex']; feed?: () => boolean; lanes?: number;
} = {}) {
  const knex = opts.knex ?? t.db.knex;
  const bus = createBus();
  const seen: DeviceBatch[][] = [];
  const recorder: IngestStage = { name: 'recorder', apply: async ({ devices }) => { seen.push(structuredClone(devices)); return []; } };
  const p = createIngestPipeline({
    knex, repos: repositories(knex), stages: [...(opts.stages ?? []), recorder], batchSize: opts.batchSize ?? 500,
    batchMs: opts.batchMs ?? 5, metrics: createGatewayMetrics({ connectedClients: () => 0, queueDepth: () => 0 }), bus, log: silentLogger,
    feed: opts.feed, lanes: opts.lanes,
  });
  return { p, seen, bus };
}

describe('ordering', () => {
  it('gives each stage a device\'s new messages oldest first, without duplicates, with the previous newest timestamp', async () => {
    const d = await t.make.device();
    const { p, seen } = pipeline();
    await p.submit(job(d.id, { id: 'a', ts: at(10).getTime() }));
    await p.submit(job(d.id, [{ id: 'c', ts: at(30).getTime() }, { id: 'b', ts: at(5).getTime() }, { id: 'a', ts: at(10).getTime() }]));
    const last = seen.at(-1)!;
    expect(last).toHaveLength(1);
    expect(last[0].previousLatest).toEqual(at(10));
    expect(last[0].messages.map((m) => [m.frameId, m.timestamp])).toEqual([['b', at(5)], ['c', at(30)]]);
  });
});

describe('frames stored before', () => {
  it('gives the stages only the frames the batch stored: none of a re-sent batch, the new ones of a mixed one', async () => {
    const d = await t.make.device();
    const { p, seen } = pipeline();
    await p.submit(job(d.id, [{ id: 'a', ts: at(1).getTime() }, { id: 'b', ts: at(2).getTime() }]));
    await p.submit(job(d.id, [{ id: 'a', ts: at(1).getTime() }, { id: 'b', ts: at(2).getTime() }]));
    expect(seen.length).toBe(1); // the re-sent batch stored nothing: no stage ran
    await p.submit(job(d.id, [{ id: 'b', ts: at(2).getTime() }, { id: 'c', ts: at(3).getTime() }]));
    expect(seen.at(-1)!.map((b) => b.messages.map((m) => m.frameId))).toEqual([['c']]);
    // the re-sent frame travels as `skipped`; the stored one carries the step its insert measured (no location, no speed)
    const [mixed] = seen.at(-1)!;
    expect(mixed.skipped?.map((m) => m.frameId)).toEqual(['b']);
    expect(mixed.messages.map((m) => m.step)).toEqual([{ meters: 0, source: 'none', vehicleId: null }]);
    const stored = await t.db.knex('messages').where({ device_id: d.id }).orderBy('ts').select('id');
    expect(stored.map((r: any) => r.id)).toEqual(['a', 'b', 'c'].map((f, k) => frameUuid(at(k + 1).getTime(), d.id, f)));
    expect(seen.flat().flatMap((b) => b.messages.map((m) => m.id)).sort()).toEqual(stored.map((r: any) => r.id).sort());
  });
});

describe('frames of any day', () => {
  it("stores a frame from 40 days ago and one of today in one batch, each in its day's partition, made before it", async () => {
    const d = await t.make.device();
    const { p, seen } = pipeline();
    const old = Date.now() - 40 * 86_400_000;
    const day = `messages_p${new Date(old).toISOString().slice(0, 10).replaceAll('-', '')}`;
    await t.db.knex.raw(`DROP TABLE IF EXISTS ${day}`);
    forgetPartitions(t.db.knex, 'messages');
    await p.submit(job(d.id, [{ id: 'old', ts: old }, { id: 'now', ts: Date.now() }]));
    expect(seen.at(-1)!.flatMap((b) => b.messages.map((m) => m.frameId))).toEqual(['old', 'now']);
    expect((await listPartitions(t.db.knex, MESSAGE_PARTITIONS)).map((x) => x.name)).toContain(day);
    expect(Number((await t.db.knex(day).where({ device_id: d.id }).count({ n: '*' }))[0].n)).toBe(1);
  });
});

describe('the cross-process feed', () => {
  /** The feed rows that name the device's messages. */
  const feedRows = async (deviceId: string) => (await t.db.knex.raw(
    'SELECT message_ids FROM message_feed WHERE ?::uuid = ANY (device_ids) ORDER BY seq', [deviceId])).rows as { message_ids: string[] }[];

  it('records each committed batch, its stored messages under one feed number, unless told not to', async () => {
    const [a, b] = [await t.make.device(), await t.make.device()];
    await pipeline().p.submit(job(a.id, [{ id: 'a1', ts: at(1).getTime() }, { id: 'a2', ts: at(2).getTime() }]));
    const stored = (await t.db.knex('messages').where('device_id', a.id).orderBy('ts').select('id')).map((r) => r.id);
    expect(await feedRows(a.id)).toEqual([{ message_ids: stored }]);

    await pipeline({ feed: () => false }).p.submit(job(b.id, [{ id: 'b1', ts: at(1).getTime() }]));
    expect(await t.db.knex('messages').where('device_id', b.id).count({ n: '*' })).toEqual([{ n: 1 }]);
    expect(await feedRows(b.id)).toEqual([]);
  });

  it('records a batch, on PGlite, while a feed reader of this process follows the database; on PostgreSQL always', async () => {
    const d = await t.make.device();
    const pgliteDb = { knex: t.db.knex, kind: 'pglite' as const };
    const { p } = pipeline({ feed: () => feedFollowed(pgliteDb) });
    expect(feedFollowed({ knex: t.db.knex, kind: 'pg' })).toBe(true);
    expect(feedFollowed(pgliteDb)).toBe(false);
    await p.submit(job(d.id, [{ id: 'x1', ts: at(1).getTime() }]));
    const reader = createMessageFeed(t.db);
    expect(feedFollowed(pgliteDb)).toBe(true);
    await p.submit(job(d.id, [{ id: 'x2', ts: at(2).getTime() }]));
    await reader.close();
    await reader.close(); // a second close counts once
    expect(feedFollowed(pgliteDb)).toBe(false);
    await p.submit(job(d.id, [{ id: 'x3', ts: at(3).getTime() }]));
    expect(await feedRows(d.id)).toEqual([{ message_ids: [frameUuid(at(2).getTime(), d.id, 'x2')] }]);
  });
});

describe('batching', () => {
  it('commits as soon as the batch size is reached, in one transaction for all queued payloads', async () => {
    const [d1, d2] = [await t.make.device(), await t.make.device()];
    const { p, seen } = pipeline({ batchSize: 3, batchMs: 60_000 });
    await Promise.all([p.submit(job(d1.id, { ts: at(1).getTime() })), p.submit(job(d2.id, { ts: at(1).getTime() })),
      p.submit(job(d1.id, { ts: at(2).getTime() }))]);
    expect(seen.map((batch) => batch.map((b) => [b.deviceId, b.messages.length]))).toEqual([[[d1.id, 2], [d2.id, 1]]]);
  });

  it('commits a partial batch once the first payload has waited the batch window', async () => {
    const d = await t.make.device();
    const { p, seen } = pipeline({ batchSize: 500, batchMs: 30 });
    await Promise.all([p.submit(job(d.id, { ts: at(1).getTime() })), p.submit(job(d.id, { ts: at(2).getTime() }))]);
    expect(seen.map((batch) => batch[0].messages.length)).toEqual([2]);
  });

  it('commits what is queued when closed', async () => {
    const d = await t.make.device();
    const { p } = pipeline({ batchMs: 60_000 });
    const done = p.submit(job(d.id, { ts: at(1).getTime() }));
    await p.close();
    await done;
    expect(await t.db.knex('messages').where('device_id', d.id).count({ n: '*' }).then(([r]) => Number(r.n))).toBe(1);
    await expect(p.submit(job(d.id, { ts: at(2).getTime() }))).rejects.toThrow('the ingest pipeline is closed');
  });
});

describe('lanes', () => {
  it('commits a trickle from many devices as one batch a window, whatever the number of lanes', async () => {
    const devices = await Promise.all(Array.from({ length: 12 }, () => t.make.device()));
    while (new Set(devices.map((d) => laneIndex(d.id, 2))).size < 2) devices.push(await t.make.device()); // both lanes
    const { p, seen } = pipeline({ lanes: 2, batchMs: 40 });
    await Promise.all(devices.map((d) => p.submit(job(d.id, { ts: at(1).getTime() }))));
    // one batch of every lane's devices, where each lane had committed one of its own
    expect(seen.map((batch) => batch.length)).toEqual([devices.length]);
    await p.close();
  });

  it('commits each lane\'s own batch once the waiting frames are more than a small part of a batch', async () => {
    // 30 frames: more than a twentieth of the default batch of 500 (25), far fewer than a batch
    const devices = await Promise.all(Array.from({ length: 30 }, () => t.make.device()));
    while (new Set(devices.map((d) => laneIndex(d.id, 2))).size < 2) devices.push(await t.make.device());
    const { p, seen } = pipeline({ lanes: 2, batchMs: 40 });
    await Promise.all(devices.map((d) => p.submit(job(d.id, { ts: at(1).getTime() }))));
    expect(seen).toHaveLength(2);
    expect(seen.map((batch) => new Set(batch.map((b) => laneIndex(b.deviceId, 2))).size)).toEqual([1, 1]);
    await p.close();
  });

  // PGlite has one connection: a second batch transaction waits for the first (the gateway runs one lane there)
  it.runIf(process.env.TEST_DATABASE_URL)('runs each lane\'s batch beside the other\'s under load, a device\'s next payload after its commit', async () => {
    // two devices of lane 0, one of lane 1
    const lane0: { id: string }[] = [];
    let other: { id: string } | undefined;
    while (lane0.length < 2 || !other) {
      const d = await t.make.device();
      if (laneIndex(d.id, 2) === 0) { if (lane0.length < 2) lane0.push(d); } else other ??= d;
    }
    const [a, a2] = lane0;
    const b = other;
    const name = (id: string) => (id === a.id ? 'a' : id === a2.id ? 'c' : 'b');
    let release!: () => void;
    const held = new Promise<void>((r) => { release = r; });
    const order: string[] = [];
    // holds the first batch open until released; records each batch as it reaches the stage and as it ends
    const gate: IngestStage = {
      name: 'gate',
      apply: async ({ devices }) => {
        const names = devices.map((d) => `${name(d.deviceId)}${d.messages.map((m) => m.frameId).join('')}`).sort().join(',');
        order.push(`start ${names}`);
        if (names === 'a1') await held;
        order.push(`end ${names}`);
        return [];
      },
    };
    const { p, seen } = pipeline({ lanes: 2, batchSize: 500, batchMs: 1, stages: [gate] });
    const first = p.submit(job(a.id, { id: '1', ts: at(1).getTime() }));
    await expect.poll(() => order).toEqual(['start a1']);
    // while lane 0 commits, its devices' payloads wait for it; lane 1's commit in a batch of their own
    const later = [p.submit(job(a.id, { id: '2', ts: at(2).getTime() })), p.submit(job(a2.id, { id: '1', ts: at(1).getTime() }))];
    await p.submit(job(b.id, { id: '1', ts: at(1).getTime() }));
    expect(order).toEqual(['start a1', 'start b1', 'end b1']);
    release();
    await Promise.all([first, ...later]);
    expect(order).toEqual(['start a1', 'start b1', 'end b1', 'end a1', 'start a2,c1', 'end a2,c1']);
    expect(seen).toHaveLength(3);
    await p.close();
  });

  it('keeps each device\'s frames in arrival order across lanes under a burst', async () => {
    const devices = await Promise.all(Array.from({ length: 6 }, () => t.make.device()));
    const { p, seen } = pipeline({ lanes: 3, batchSize: 4, batchMs: 1 });
    const jobs = [];
    for (let k = 1; k <= 8; k++) for (const d of devices) jobs.push(p.submit(job(d.id, { id: `${k}`, ts: at(k).getTime() })));
    await Promise.all(jobs);
    // every frame stored once, and each device's batches took its frames in the order they came
    for (const d of devices) {
      const batches = seen.flatMap((batch) => batch.filter((b) => b.deviceId === d.id).map((b) => b.messages.map((m) => Number(m.frameId))));
      expect(batches.flat()).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    }
    await p.close();
  });
});

describe('fair scheduling between devices', () => {
  it('takes another device\'s payload into the next batch while one device has a backlog, each device\'s in order', async () => {
    const [flood, other, third] = [await t.make.device(), await t.make.device(), await t.make.device()];
    const name = (id: string) => (id === flood.id ? 'f' : id === other.id ? 'o' : 't');
    const { p, seen } = pipeline({ batchSize: 3, batchMs: 60_000 });
    // the third payload fills a batch, which starts at once; the rest wait for it: f4..f9, then o1, t1, o2
    const jobs = Array.from({ length: 9 }, (_, k) => p.submit(job(flood.id, { id: `${k + 1}`, ts: at(k + 1).getTime() })));
    jobs.push(p.submit(job(other.id, { id: '1', ts: at(1).getTime() })), p.submit(job(third.id, { id: '1', ts: at(1).getTime() })),
      p.submit(job(other.id, { id: '2', ts: at(2).getTime() })));
    await Promise.all(jobs);
    const batches = seen.map((batch) => batch.map((b) => `${name(b.deviceId)}${b.messages.map((m) => m.frameId).join('')}`).sort());
    // payloads taken in turn, one per device: the backlog of f does not hold o and t back
    expect(batches).toEqual([['f123'], ['f4', 'o1', 't1'], ['f56', 'o2'], ['f789']]);
    await p.close();
  });

  it('serves first, in the next batch, the devices a full batch left out', async () => {
    const devices = await Promise.all(Array.from({ length: 5 }, () => t.make.device()));
    const name = (id: string) => String(devices.findIndex((d) => d.id === id));
    const { p, seen } = pipeline({ batchSize: 2, batchMs: 60_000 });
    const jobs = [];
    // devices 0 and 1 start a batch; then each of the five has two payloads waiting
    for (const d of devices.slice(0, 2)) jobs.push(p.submit(job(d.id, { id: 'a', ts: at(1).getTime() })));
    for (const k of ['b', 'c']) for (const d of devices) jobs.push(p.submit(job(d.id, { id: k, ts: at(k === 'b' ? 2 : 3).getTime() })));
    await Promise.all(jobs);
    const batches = seen.map((batch) => batch.map((b) => `${name(b.deviceId)}${b.messages.map((m) => m.frameId).join('')}`).sort());
    expect(batches).toEqual([['0a', '1a'], ['0b', '1b'], ['2b', '3b'], ['0c', '4b'], ['1c', '2c'], ['3c', '4c']]);
    await p.close();
  });
});

describe('stages and events', () => {
  it('stores the events a stage returns with the batch and publishes messages and events after the commit', async () => {
    const d = await t.make.device();
    const marker: IngestStage = {
      name: 'marker',
      apply: async ({ devices }) => devices.flatMap((b) => b.messages.map((m) => ({
        deviceId: b.deviceId, vehicleId: null, timestamp: m.timestamp, eventType: 'test-mark', objectType: 'vehicle', objectId: null, meta: { rpm: m.data.rpm },
      }))),
    };
    const { p, bus } = pipeline({ stages: [marker] });
    const messages: StoredMessage[] = [];
    const events: StoredEvent[][] = [];
    bus.onMessage(d.id, (m) => messages.push(m));
    bus.onEvents((e) => events.push(e));
    await p.submit(job(d.id, { ts: at(1).getTime(), data: { rpm: 1500 } }));
    const [row] = await t.db.knex('events').where('device_id', d.id);
    expect(row).toMatchObject({ event_type: 'test-mark', meta: { rpm: 1500 } });
    expect(messages.map((m) => [m.timestamp, m.data])).toEqual([[at(1), { rpm: 1500 }]]);
    expect(events.flat().map((e) => e.id)).toEqual([row.id]);
  });
});

describe('plans', () => {
  it('runs the batch\'s statements on generic plans without bitmap scans, its first one included, for that transaction only', async () => {
    const d = await t.make.device();
    const modes: string[] = [];
    const insertPlans: { generic: number; custom: number }[] = [];
    const probe: IngestStage = {
      name: 'probe',
      apply: async ({ trx }) => {
        const { rows: [r] } = await trx.raw("SELECT current_setting('plan_cache_mode') AS m, current_setting('enable_bitmapscan') AS b");
        modes.push(`${r.m} ${r.b}`);
        // the batch's insert (its first statement, a named one on this connection): how PostgreSQL planned its runs
        const { rows } = await trx.raw(`SELECT generic_plans::int AS generic, custom_plans::int AS custom FROM pg_prepared_statements
          WHERE statement LIKE '%INSERT INTO messages%'`);
        insertPlans.push(...rows);
        return [];
      },
    };
    const { p } = pipeline({ stages: [probe] });
    // more batches than PostgreSQL's five custom plans before it compares them with the generic one
    for (let k = 1; k <= 7; k++) await p.submit(job(d.id, { ts: at(k).getTime() }));
    expect(modes).toEqual(Array(7).fill('force_generic_plan off'));
    // the pool may hand a batch another connection: each connection's insert ran on its generic plan only
    expect(insertPlans.length).toBeGreaterThan(0);
    for (const plans of insertPlans) expect(plans.custom).toBe(0);
    expect(Math.max(...insertPlans.map((x) => x.generic))).toBeGreaterThan(0);
    // the API's statements, on the same pool, keep PostgreSQL's choice
    const after = await t.db.knex.transaction(async (trx) =>
      (await trx.raw("SELECT current_setting('plan_cache_mode') || ' ' || current_setting('enable_bitmapscan') AS m")).rows[0].m);
    expect(after).toBe('auto on');
  });
});

describe('planned stages', () => {
  it('runs the statements of consecutive planned stages in one round trip, then each one\'s after in list order', async () => {
    const d = await t.make.device();
    const order: string[] = [];
    const planned = (name: string, value: number): IngestStage => {
      const statement = { ctes: `${name}_in AS (SELECT ?::int AS v)`, main: `SELECT v FROM ${name}_in` };
      return {
        name,
        apply: async () => { throw new Error('the pipeline runs the plan'); },
        plan: () => ({
          part: { statement, bindings: [value] },
          after: async (rows) => { order.push(`${name}:${rows!.map((r) => r.v)}`); return []; },
        }),
      };
    };
    const plain: IngestStage = { name: 'plain', apply: async () => { order.push('plain'); return []; } };
    const { p } = pipeline({ stages: [planned('a', 1), planned('b', 2), plain, planned('c', 3)] });
    // the stages' statements (the insert is a fused statement too)
    const { sql } = await recordStatements(t.db.knex, () => p.submit(job(d.id, { ts: at(1).getTime() })), /^(?![\s\S]*INSERT INTO messages)[\s\S]*part_0/);
    expect(sql).toHaveLength(2);
    expect(order).toEqual(['a:1', 'b:2', 'plain', 'c:3']);
  });

  it('continues an open trip and counts its distance in one statement, the steps stored with the messages', async () => {
    const d = await t.make.device();
    const deps = { config: t.config, knex: t.db.knex, repos: t.repos, log: silentLogger };
    const { p } = pipeline({ stages: [tripsStage(deps), distanceStage(deps)] });
    const frame = (s: number, kind?: string) => ({ ts: at(s).getTime(), ...(kind ? { kind } : {}), data: { vehicleSpeed: 40 },
      location: { lat: 32.78 + s * 0.0001, lon: -96.8 } });
    await p.submit(job(d.id, [frame(1, 'startup'), frame(2)]));
    const { sql } = await recordStatements(t.db.knex, () => p.submit(job(d.id, [frame(3), frame(4)])), /INSERT INTO trips|UPDATE trips/);
    expect(sql).toHaveLength(1);
    expect(sql[0]).toMatch(/UPDATE trips t SET/);
    expect(sql[0]).toMatch(/INSERT INTO vehicle_distances/);
    const [trip] = await t.db.knex('trips').where('device_id', d.id);
    expect(trip).toMatchObject({ message_count: 4, stop_ts: null });
    // each frame 0.0001° of latitude (~11.1 m) north of the one before: measured by GPS, the first has no predecessor
    const steps = await t.db.knex('messages').where('device_id', d.id).orderBy('ts').select({ source: 'step_source', meters: 'step_m' });
    expect(steps.map((r: any) => r.source)).toEqual(['none', 'gps', 'gps', 'gps']);
    for (const r of steps.slice(1)) expect(Number(r.meters)).toBeCloseTo(11.09, 1);
  });
});

describe('early reads', () => {
  it('stores a batch, reads each device\'s previous newest, its vehicle and its rules in one statement', async () => {
    const app = await t.make.application();
    const d = await t.make.device(app.principal);
    const vehicle = await t.repos.vehicles.upsertByVin(`VVEARLY${randomUUID().replace(/\D/g, '').slice(0, 10).padEnd(10, '1')}`, async () => ({}));
    await t.repos.ingest.associateAt(d.id, vehicle.id, at(0));
    await createRule(t, app, d.id, { name: 'fast', boundaries: [{ type: 'parametric', parameter: 'vehicleSpeed', min: 80, max: null }] });
    const deps = { config: t.config, knex: t.db.knex, repos: t.repos, log: silentLogger };
    const { p, seen } = pipeline({ stages: [vehiclesStage(deps), rulesStage(deps)] });
    await p.submit(job(d.id, { ts: at(1).getTime(), data: { vehicleSpeed: 40 } }));
    const { sql } = await recordStatements(t.db.knex,
      () => p.submit(job(d.id, [{ ts: at(2).getTime(), data: { vehicleSpeed: 90 } }, { ts: at(3).getTime(), data: { vehicleSpeed: 95 } }])),
      /messages|device_vehicles|rules/);
    // the insert with the reads; then the rules' own evaluation and its events
    expect(sql[0]).toMatch(/INSERT INTO messages/);
    expect(sql[0]).toMatch(/SELECT b\.device_id, a\.vehicle_id, a\.started_at/);
    expect(sql[0]).toMatch(/JOIN rules r ON r\.device_id = d\.id/);
    expect(sql.filter((q) => /SELECT b\.device_id, a\.vehicle_id, a\.started_at|JOIN rules r ON r\.device_id = d\.id/.test(q))).toHaveLength(1);
    const last = seen.at(-1)!;
    expect(last[0].previousLatest).toEqual(at(1));
    expect(last[0].messages.map((m) => m.vehicleId)).toEqual([vehicle.id, vehicle.id]);
    const events = await t.db.knex('events').where({ device_id: d.id }).orderBy('ts').select('event_type', 'ts');
    expect(events.map((e: any) => [e.event_type, new Date(e.ts).getTime()])).toEqual([['rule-leave', at(1).getTime()], ['rule-enter', at(2).getTime()]]);
  });

  it('reads the associations after recording a VIN the batch carries', async () => {
    const d = await t.make.device();
    const deps = { config: t.config, knex: t.db.knex, repos: t.repos, log: silentLogger };
    const { p, seen } = pipeline({ stages: [vehiclesStage(deps)] });
    await p.submit(job(d.id, [{ ts: at(1).getTime() }, { ts: at(2).getTime(), kind: 'startup', vin: '1HGCM82633A004352' }, { ts: at(3).getTime() }]));
    const [vehicle] = await t.db.knex('vehicles').where({ vin: '1HGCM82633A004352' });
    expect(seen.at(-1)![0].messages.map((m) => m.vehicleId)).toEqual([null, vehicle.id, vehicle.id]);
  });
});

describe('distance across a VIN change', () => {
  it('counts each step for the vehicle the device was in, the batch\'s own VIN frame included', async () => {
    const d = await t.make.device();
    const deps = { config: t.config, knex: t.db.knex, repos: t.repos, log: silentLogger };
    const { p } = pipeline({ stages: [vehiclesStage(deps), distanceStage(deps)] });
    // 11.09 m north a second, at 40 km/h
    const frame = (s: number, extra: Record<string, unknown> = {}) =>
      ({ ts: at(s).getTime(), data: { vehicleSpeed: 40 }, location: { lat: 32.78 + s * 0.0001, lon: -96.8 }, ...extra });
    await p.submit(job(d.id, [frame(0, { kind: 'startup', vin: 'JH4KA8260MC000000' }), frame(1)]));
    // the insert measures these with the vehicle it knows (the first one); the VIN frame moves the last two
    await p.submit(job(d.id, [frame(2), frame(3, { kind: 'startup', vin: '2B4GP44R6WR942762' }), frame(4)]));
    const [first] = await t.db.knex('vehicles').where({ vin: 'JH4KA8260MC000000' });
    const [second] = await t.db.knex('vehicles').where({ vin: '2B4GP44R6WR942762' });
    const steps = await t.db.knex('messages').where('device_id', d.id).orderBy('ts').select('step_vehicle_id', 'step_m');
    expect(steps.map((r: any) => r.step_vehicle_id)).toEqual([first.id, first.id, first.id, second.id, second.id]);
    const total = async (v: string) => Number((await t.db.knex('vehicle_distances').where({ vehicle_id: v }).first())?.travelled_m ?? 0);
    expect(await total(first.id)).toBeCloseTo(2 * 11.09, 1);
    expect(await total(second.id)).toBeCloseTo(2 * 11.09, 1);
    expect(await total(first.id)).toBeCloseTo(Number(steps[1].step_m) + Number(steps[2].step_m), 6);
  });
});

describe('failures', () => {
  it('stores a frame once even when a live listener throws after the commit', async () => {
    const d = await t.make.device();
    const { p, bus } = pipeline();
    bus.onMessage(d.id, () => { throw new Error('listener bug'); });
    await p.submit(job(d.id, { ts: at(1).getTime() }));
    expect(await t.db.knex('messages').where('device_id', d.id).count({ n: '*' }).then(([r]) => Number(r.n))).toBe(1);
  });


  it('stores the other payloads of a failing batch and keeps the frame the database refuses as a dead letter', async () => {
    const [d1, d2] = [await t.make.device(), await t.make.device()];
    const poison: IngestStage = {
      name: 'poison',
      apply: async ({ devices }) => {
        if (devices.some((b) => b.messages.some((m) => m.data.rpm === 666))) throw new Error('cannot derive rpm 666');
        return [];
      },
    };
    const { p } = pipeline({ stages: [poison], batchSize: 10, batchMs: 20 });
    const jobs: IngestJob[] = [job(d1.id, { ts: at(1).getTime(), data: { rpm: 1000 } }),
      job(d2.id, [{ ts: at(1).getTime(), data: { rpm: 2000 } }, { ts: at(2).getTime(), data: { rpm: 666 } }])];
    await Promise.all(jobs.map((j) => p.submit(j)));
    const rpms = async (id: string) => (await storedMessages(t.db.knex).where('device_id', id).orderBy('ts')).map((r) => r.data.rpm);
    expect(await rpms(d1.id)).toEqual([1000]);
    expect(await rpms(d2.id)).toEqual([2000]);
    expect((await t.repos.ingest.deadLetters(d2.id)).map((l) => [l.frameIndex, l.reason])).toEqual([[1, 'frame 1: storage failed: cannot derive rpm 666']]);
  });

  it('keeps a frame the database refuses as its own frame with a one-line reason, without the statement\'s SQL text', async () => {
    const d = await t.make.device();
    // a real statement failing in the database (float8 overflow), its text long as the ingest statements are
    const overflow: IngestStage = {
      name: 'overflow',
      apply: async ({ devices, trx }) => {
        const m = devices.flatMap((b) => b.messages).find((x) => x.data.rpm === 666);
        if (m) await trx.raw(`SELECT ?::float8 * 1e308 AS v /* ${'padding '.repeat(400)} */\n  FROM generate_series(1, 1)`, [m.data.rpm as number]);
        return [];
      },
    };
    const { p } = pipeline({ stages: [overflow], batchSize: 10, batchMs: 20 });
    const frames = [{ id: 'ok', ts: at(1).getTime(), data: { rpm: 2000 } },
      { id: 'bad', ts: at(2).getTime(), data: { rpm: 666, fuelType: 'x'.repeat(1000) } }];
    await p.submit(job(d.id, frames));
    expect((await storedMessages(t.db.knex).where('device_id', d.id)).map((r) => r.data.rpm)).toEqual([2000]);
    const [letter, ...others] = await t.repos.ingest.deadLetters(d.id);
    expect(others).toEqual([]);
    expect(letter.frameIndex).toBe(1);
    expect(letter.reason).toMatch(/^frame 1: storage failed \(22003\): value out of range: overflow$/);
    const raw = JSON.parse(letter.raw!.toString('utf8'));
    expect([raw.id, raw.ts, raw.data.rpm]).toEqual(['bad', at(2).toISOString(), 666]); // the frame, not the payload
  });

  it('rejects the payloads while the database is down, so no acknowledgement goes out', async () => {
    const db = await createTestDb();
    const d = await repositories(db.knex).devices.provision({ name: 'x', ownerId: (await repositories(db.knex).devices.createOwner({ name: 'o' })).id });
    const { p } = pipeline({ knex: db.knex });
    await db.close();
    await expect(p.submit(job(d.device.id, { ts: at(1).getTime() }))).rejects.toThrow();
  });
});
