// `drivewire bench` (the real binary) runs the connections, knee, api and webhooks scenarios, small, on a PostgreSQL
// database of its own and prints the figures a benchmark result carries: each process's CPU and RSS (the
// PostgreSQL backends' read from /proc), the versions, what idle devices cost, the knee's steps, and no frame
// lost or stored twice, no webhook delivered twice. It runs where the suite has a PostgreSQL server (CI's second
// phase): there a platform starts much faster than on the embedded database.
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { createTestDb } from '../helpers/db.js';

const number = expect.any(Number);
/** The installed HTTP client's version, which the results must name (the webhook figures depend on it). */
const undiciVersion = JSON.parse(fs.readFileSync(new URL('../../node_modules/undici/package.json', import.meta.url), 'utf8')).version;

describe.skipIf(!process.env.TEST_DATABASE_URL)('drivewire bench, small: connections, knee, api and webhooks (the real binary)', { timeout: 120_000 }, () => {
  let db: Awaited<ReturnType<typeof createTestDb>>;
  beforeAll(async () => { db = await createTestDb(); });
  afterAll(async () => { await db?.close(); });

  it('reports processes, versions, the per-device cost of idle connections, and the knee steps without loss', async () => {
    const bench = (scenario: string) => runCli(['bench', scenario, '--smoke', '--database-url', db.url!], {}, 110_000);
    // the knee as the smoke runs it (its steps, 2 s each), but with its baselines: bare Aedes and the storing floor
    const knee0 = await runCli(['bench', 'knee', '--devices', '5', '--steps', '100,200', '--step-seconds', '2', '--warmup', '1', '--no-save',
      '--database-url', db.url!], {}, 110_000);
    const [connections, knee] = [await bench('connections'), knee0];
    for (const r of [connections, knee]) {
      expect(r.stderr).not.toMatch(/^(drivewire|bench): /m);
      expect(r.code).toBe(0);
    }
    const c = JSON.parse(connections.stdout);
    const k = JSON.parse(knee.stdout);
    for (const r of [c, k]) {
      expect(r.database).toBe('pg');
      expect(r.versions).toMatchObject({ node: process.version, aedes: expect.any(String), mqtt: expect.any(String), undici: undiciVersion, pg: expect.any(String), postgresql: expect.any(String), postgis: expect.any(String) });
      expect(r.processes.platform).toMatchObject({ cpuUserSeconds: number, cpuSystemSeconds: number, peakRssBytes: number, maxRssSinceStartBytes: number });
      expect(r.processes.platform.peakRssBytes).toBeGreaterThan(0);
      expect(r.processes.loadGenerator).toMatchObject({ cpuUserSeconds: number, cpuSystemSeconds: number });
      // the server is on this machine: its backends' CPU is read from /proc
      expect(r.processes.postgres).toMatchObject({ cpuUserSeconds: number, cpuSystemSeconds: number });
    }

    expect(c.scenario).toBe('connections');
    expect(c.devices).toBe(50);
    expect(c.processes.loadGenerator.where).toBe('child process');
    expect(c.platform).toMatchObject({ devices: 50, connected: 50, failed: 0, countedByBroker: 50, droppedWhileHeld: 0, connectMs: number, connectionsPerSecond: number, heapPerDeviceBytes: number });
    // reported, whatever its sign: over 50 devices (~350 KB) a scavenge or the allocator giving pages back moves the
    // process's RSS by more than the connections (it can come out negative); a measure, not a check
    expect(Number.isFinite(c.platform.rssPerDeviceBytes)).toBe(true);

    expect(k.scenario).toBe('knee');
    expect(k.qos).toBe(1);
    expect(k.processes.loadGenerator.where).toBe('worker thread');
    // the smoke's rates, in order (a loaded machine may stop after the first), and the first one measured
    expect([...k.steps.map((s: any) => s.offeredFramesPerSecond), ...k.stepsNotRun]).toEqual([100, 200]);
    expect(k.steps.length).toBeGreaterThanOrEqual(1);
    expect(k.steps[0].storedFramesPerSecond).toBeGreaterThan(0);
    for (const s of k.steps) {
      expect(s).toMatchObject({ sentFramesPerSecond: number, storedFramesPerSecond: number, backlogFrames: number, publishToAckMs: { p50: number, p99: number } });
      expect(s.sentFramesPerSecond).toBeGreaterThan(0);
      // the step's own ingest batches: every frame it stored went through one, of at most a batch's frames (500)
      expect(s.batches.batches).toBeGreaterThan(0);
      expect(s.batches.meanBatchFrames).toBeGreaterThanOrEqual(1);
      expect(s.batches.meanBatchFrames).toBeLessThanOrEqual(500);
      expect(s.batches.meanCommitMs).toBeGreaterThan(0);
    }
    expect(k).toMatchObject({ lost: 0, duplicates: 0, publishErrors: 0, disconnects: 0 });
    // the same steps against bare Aedes and the storing floor, and the knee's ratio to each (null where a knee is none)
    for (const base of [k.baselines.bareAedes, k.baselines.storingAedes]) {
      expect([...base.steps.map((s: any) => s.offeredFramesPerSecond), ...base.stepsNotRun]).toEqual([100, 200]);
      expect(base.steps[0].storedFramesPerSecond).toBeGreaterThan(0);
    }
    // at 100 frames/s both keep up (the floor storing what it acknowledges), so both have a knee
    expect(k.baselines.bareAedes.steps[0]).toMatchObject({ keptUp: true });
    expect(k.baselines.storingAedes.steps[0]).toMatchObject({ keptUp: true, unacknowledged: 0 });
    // each ratio is the right knee over the right one (the platform's may have none on a loaded machine: null)
    const kneeOf = (r: any): number | undefined => r.knee?.offeredFramesPerSecond;
    const ratio = (a?: number, b?: number) => (a && b ? Math.round((a / b) * 100) / 100 : null);
    expect(k.baselines.ratioToBareAedes).toBe(ratio(kneeOf(k), kneeOf(k.baselines.bareAedes)));
    expect(k.baselines.ratioToStoringAedes).toBe(ratio(kneeOf(k), kneeOf(k.baselines.storingAedes)));
    expect(k.baselines.storingAedes.ratioToBareAedes).toBe(ratio(kneeOf(k.baselines.storingAedes), kneeOf(k.baselines.bareAedes)));
    expect(k.baselines.storingAedes.ratioToBareAedes).toBeGreaterThan(0);
    expect(k.framesAcknowledged).toBe(k.framesSent);
    expect(k.framesStored).toBe(k.framesSent);
  });

  it('serves the api scenario from an API process of its own, answering every request during ingest, at the offered rate', async () => {
    const r = await runCli(['bench', 'api', '--smoke', '--api-process', '--api-rate', '40', '--database-url', db.url!], {}, 110_000);
    expect(r.stderr).not.toMatch(/^(drivewire|bench): /m);
    expect(r.code).toBe(0);
    const a = JSON.parse(r.stdout);
    expect(a.layout).toMatch(/own process/);
    expect(a.apiProcessCpuSeconds).toBeGreaterThan(0);
    expect(a.platform).toMatchObject({ requestsPerSecond: number, non2xx: 0, errors: 0 });
    expect(a.platform.requestsPerSecond).toBeGreaterThan(0);
    // --api-rate: a latency at a given load, not at the most the server answers (hundreds a second even here)
    expect(a.requestsPerSecondOffered).toBe(40);
    expect(a.platform.requestsPerSecond).toBeLessThanOrEqual(60);
    expect(a.ingestDuringMeasurement.framesPerSecondStored).toBeGreaterThan(0);
  });

  it('delivers a queue of rule webhooks exactly once and measures it against a bare http client', async () => {
    // another run's webhooks in the same database first, delivered to its own receiver, as `bench --smoke` runs the
    // rules scenario before this one: counted as this run's, they made it wait for posts that never came
    const earlier = await runCli(['bench', 'rules', '--smoke', '--database-url', db.url!], {}, 110_000);
    expect(earlier.code).toBe(0);
    expect(Number((await db.knex.raw('SELECT count(*)::int AS n FROM notifications')).rows[0].n)).toBeGreaterThan(0);
    // the smoke's size, with the baseline (smoke leaves baselines out)
    const r = await runCli(['bench', 'webhooks', '--devices', '5', '--rules', '2', '--duration', '3', '--warmup', '1', '--no-save',
      '--database-url', db.url!], {}, 110_000);
    expect(r.stderr).not.toMatch(/^(drivewire|bench): /m);
    expect(r.code).toBe(0);
    const w = JSON.parse(r.stdout.slice(r.stdout.indexOf('{')));
    expect(w.queued).toBeGreaterThan(0);
    expect(w).toMatchObject({ scenario: 'webhooks', webhooksDelivered: w.queued, distinctNotifications: w.queued, complete: w.queued });
    expect(w.cpuUsPerWebhook).toMatchObject({ worker: number, postgres: number });
    expect(w.baselines.bareHttpClient).toMatchObject({ webhooks: w.queued, failed: 0, webhooksPerSecond: number, cpuUsPerWebhook: number });
    expect(w.baselines.ratioToBareHttpClient).toBeGreaterThan(0);
  });
});
