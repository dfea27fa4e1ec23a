import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repositories, type Repositories } from '../../db/index.js';
import type { Run } from '../../db/repositories/runs.repository.js';
import { silentLogger } from '../../lib/logger.js';
import { createDummy, startRun } from '../../api/modules/dummies/dummies.service.js';
import { createRunScheduler, type RunSchedulerOptions } from '../../simulator/scheduler.js';
import { seedStoredRoutes } from '../../simulator/routes-seed.js';
import { estimateRun } from '../../simulator/runs.js';
import { PASS_GAP_MS } from '../../simulator/clock.js';
import { loadStoredRoutes } from '../../simulator/route.js';
import { NO_GATEWAY, notStored } from '../../simulator/run-driver.js';
import { storedPassFrames } from '../../simulator/stored-frames.js';
import { createTestDb } from '../helpers/db.js';
import { factories } from '../helpers/factories.js';
import { startTestBroker, type TestBroker } from './scheduler-broker.js';
import { syntheticRoute } from './synthetic-route.js';

const VIN = 'VV1AB2CD3EF456789';
const stored = await loadStoredRoutes();
const BACK_HOME = stored.find((r) => r.name === 'DFW - Back Home')!;
const DOWNTOWN = stored.find((r) => r.name === 'DFW - Downtown Route 1')!;

let db: Awaited<ReturnType<typeof createTestDb>>;
let repos: Repositories;
let broker: TestBroker;
beforeAll(async () => {
  db = await createTestDb();
  repos = repositories(db.knex);
  await seedStoredRoutes(repos.routes);
  broker = await startTestBroker(repos);
});
afterAll(async () => { await broker?.close(); await db?.close(); });

const scheduler = (extra: Partial<RunSchedulerOptions> = {}) =>
  createRunScheduler({ repos, log: silentLogger, mqttUrl: broker.url, pollMs: 100, progressMs: 300, leaseMs: 3000, ...extra });

async function dummyWithRun(run: { routeId: string; speed?: number; repeat?: boolean }, kind: 'enterprise' | 'consumer' = 'enterprise') {
  const app = await factories(repos).application(kind);
  const dummy = await createDummy({ db, repos }, app.principal, `d-${randomUUID().slice(0, 8)}`);
  const started = await startRun({ db, repos }, app.principal, dummy.id, { vin: VIN, ...run });
  return { app, dummy, run: started, frames: () => broker.frames.get(dummy.deviceId) ?? [] };
}

/** A 10 m straight drive of 4.3 s (6 frames), imported by the application. */
async function shortRoute(applicationId: string) {
  const route = { ...syntheticRoute([[10, 0]], 4300), id: randomUUID(), name: `short ${randomUUID()}` };
  await repos.routes.create(applicationId, route);
  return route;
}

async function until<T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs = 15_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (value) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
const row = (run: Run) => repos.runs.get(run.dummyId, run.id) as Promise<Run>;
const finished = (run: Run) => until('the run to finish', async () => { const r = await row(run); return r.state === 'finished' && r; });

describe('run scheduler', () => {
  it('drives a run through starting → running → finished, sending every frame with the dummy credentials', async () => {
    const { dummy, run, frames } = await dummyWithRun({ routeId: BACK_HOME.id, speed: 40 });
    const states: string[] = [];
    const s = scheduler();
    try {
      const end = await until('completion', async () => {
        const r = await row(run);
        if (states.at(-1) !== r.state) states.push(r.state);
        return r.state === 'finished' && r;
      });
      expect(states).toEqual(['starting', 'running', 'finished']);
      const { framesTotal, driveMs } = estimateRun(BACK_HOME);
      expect(end).toMatchObject({ outcome: 'completed', error: null, repeatCount: 0, framesSent: framesTotal, remainingMessages: 0 });
      // The estimate's traffic is another draw than the pass's: its duration is the route's within the solver's 0.01%.
      expect(Math.abs(end.driveMs - driveMs)).toBeLessThan(driveMs * 0.001);
      expect(end.distance).toBeCloseTo(389.4, 0); // the polyline's length, ±0.5 m
      expect(end.startedAt).not.toBeNull();
      const sent = frames();
      expect(sent).toHaveLength(framesTotal);
      expect(sent[0]).toMatchObject({ kind: 'startup', vin: VIN });
      expect(sent.at(-1)!.kind).toBe('shutdown');
      expect(sent.at(-1)!.ts - sent[0].ts).toBe(end.driveMs);
      // Stamped from the pass's start on, not before the run was asked for.
      expect(sent[0].ts).toBeGreaterThanOrEqual(run.createdAt.getTime());
      expect(sent[0].ts).toBeLessThanOrEqual(end.startedAt!.getTime() + 1000);
      expect((await repos.dummies.device(dummy.id))!.lastFrameAt).toBeGreaterThanOrEqual(sent.at(-1)!.ts);
      expect(await repos.runs.current(dummy.id)).toBeUndefined();
      expect(s.active()).toBe(0);
    } finally {
      await s.close();
    }
  });

  it("starts a dummy's next pass at once, stamped on from just after the previous pass's last stamp", async () => {
    const { app, dummy, run, frames } = await dummyWithRun({ routeId: BACK_HOME.id, speed: 50 });
    const s = scheduler();
    try {
      await finished(run);
      const firstLast = frames().at(-1)!.ts;
      expect(firstLast).toBeGreaterThan(Date.now() + 60_000); // 87 s of drive sent in under 2 s: the dummy's clock is ahead
      const next = await startRun({ db, repos }, app.principal, dummy.id, { vin: VIN, routeId: BACK_HOME.id, speed: 50 });
      const { driveMs } = estimateRun(BACK_HOME);
      expect(next.nextPassAt).toBeNull();
      expect(next.waitReason).toBeNull();
      expect(next.remainingSeconds!).toBeLessThan(driveMs / 50 / 1000 + 0.01);
      const startedAt = Date.now();
      const done = await finished(next);
      expect(done.outcome).toBe('completed');
      expect(Date.now() - startedAt).toBeLessThan(10_000);
      const second = frames().filter((f) => f.ts > firstLast);
      expect(second[0].ts - firstLast).toBe(PASS_GAP_MS);
      expect(second.at(-1)!.ts - second[0].ts).toBe(done.driveMs);
    } finally {
      await s.close();
    }
  });

  it("waits, saying why, when the next pass would lead real time by more than a dummy may", async () => {
    const maxLeadMs = 100_000; // one pass of Back Home at 50× leads by 85 s; two back to back by 170 s
    const app = await factories(repos).application('enterprise');
    const dummy = await createDummy({ db, repos }, app.principal, `d-${randomUUID().slice(0, 8)}`);
    const config = { dummyMaxLeadMs: maxLeadMs };
    const run = await startRun({ db, repos, config }, app.principal, dummy.id, { vin: VIN, routeId: BACK_HOME.id, speed: 50 });
    const s = scheduler({ maxLeadMs });
    try {
      await finished(run);
      const next = await startRun({ db, repos, config }, app.principal, dummy.id, { vin: VIN, routeId: BACK_HOME.id, speed: 50 });
      expect(next.nextPassAt!.getTime() - Date.now()).toBeGreaterThan(50_000);
      expect(next.waitReason).toMatch(/^the dummy's clock is \d+ s ahead of real time after its earlier runs; this pass would end \d+ min ahead, and the gateway accepts a dummy's frames at most 100 s ahead/);
      const held = await until('the scheduler to report the wait', async () => {
        const r = await repos.runs.current(dummy.id);
        return r?.progressAt && r.waitReason && r;
      });
      expect(held).toMatchObject({ state: 'starting', waitReason: expect.stringMatching(/at most 100 s ahead/) });
      await repos.runs.requestStop(dummy.id);
      expect(await finished(next)).toMatchObject({ outcome: 'stopped', framesSent: 0, startedAt: null });
      // A pass that leads by more than the bound on its own is refused at once.
      await expect(startRun({ db, repos, config: { dummyMaxLeadMs: 10_000 } }, app.principal, dummy.id, { vin: VIN, routeId: BACK_HOME.id, speed: 50 }))
        .rejects.toThrow(/at speed 50 this drive of 87 s would stamp its last frame 85 s ahead of real time/);
    } finally {
      await s.close();
    }
  });

  it('stops a run within a second of the request, ending with a shutdown frame', async () => {
    const { dummy, run, frames } = await dummyWithRun({ routeId: DOWNTOWN.id, speed: 20 }, 'consumer');
    const s = scheduler();
    try {
      await until('10 frames', async () => frames().length >= 10);
      const asked = Date.now();
      await repos.runs.requestStop(dummy.id);
      const end = await finished(run);
      expect(Date.now() - asked).toBeLessThan(1500);
      expect(end.outcome).toBe('stopped');
      expect(frames().at(-1)!.kind).toBe('shutdown');
      expect(end.framesSent).toBe(frames().length);
      expect(end.framesSent).toBeLessThan(estimateRun(DOWNTOWN).framesTotal);
    } finally {
      await s.close();
    }
  });

  it('repeats a run, counting passes, with fresh frame ids each pass', async () => {
    const app = await factories(repos).application();
    const route = await shortRoute(app.id);
    const dummy = await createDummy({ db, repos }, app.principal, 'repeater');
    const run = await startRun({ db, repos }, app.principal, dummy.id, { vin: VIN, routeId: route.id, repeat: true });
    const s = scheduler();
    try {
      const frames = () => broker.frames.get(dummy.deviceId) ?? [];
      await until('a second pass', async () => frames().filter((f) => f.kind === 'startup').length === 2, 20_000);
      expect((await row(run)).repeatCount).toBe(1);
      await repos.runs.requestStop(dummy.id);
      const end = await finished(run);
      expect(end).toMatchObject({ outcome: 'stopped', repeatCount: 1 });
      const all = frames();
      expect(new Set(all.map((f) => f.id)).size).toBe(all.length);
      const second = all.map((f) => f.kind).lastIndexOf('startup');
      expect(all[second].ts).toBeGreaterThanOrEqual(all[second - 1].ts);
      expect(all[second - 1].kind).toBe('shutdown');
    } finally {
      await s.close();
    }
  });

  it('resumes a run after a clean restart: released as starting, replayed from the start by the next scheduler', async () => {
    const app = await factories(repos).application();
    const route = await shortRoute(app.id);
    const dummy = await createDummy({ db, repos }, app.principal, 'restart');
    const run = await startRun({ db, repos }, app.principal, dummy.id, { vin: VIN, routeId: route.id });
    const frames = () => broker.frames.get(dummy.deviceId) ?? [];
    const first = scheduler();
    await until('2 frames', async () => frames().length >= 2);
    await first.close();
    const released = await row(run);
    expect(released.state).toBe('starting');
    expect(frames().at(-1)!.kind).toBe('shutdown');
    const beforeRestart = frames().length;
    const second = scheduler();
    try {
      const end = await finished(run);
      const { framesTotal } = estimateRun(route);
      expect(end).toMatchObject({ outcome: 'completed', framesSent: beforeRestart + framesTotal });
      const replay = frames().slice(beforeRestart);
      expect(replay).toHaveLength(framesTotal);
      expect(replay[0].kind).toBe('startup');
      expect(replay[0].ts).toBeGreaterThanOrEqual(frames()[beforeRestart - 1].ts);
      expect(new Set(frames().map((f) => f.id)).size).toBe(frames().length);
    } finally {
      await second.close();
    }
  });

  it("takes over a dead worker's running run once its lease expires, replaying it from the start", async () => {
    const app = await factories(repos).application();
    const route = await shortRoute(app.id);
    const dummy = await createDummy({ db, repos }, app.principal, 'orphan');
    const run = await startRun({ db, repos }, app.principal, dummy.id, { vin: VIN, routeId: route.id });
    expect((await repos.runLeases.claim('dead-worker', 400, 100)).map((r) => r.id)).toContain(run.id);
    await repos.runLeases.markRunning(run.id, 'dead-worker');
    const s = scheduler();
    try {
      const frames = () => broker.frames.get(dummy.deviceId) ?? [];
      await until('the startup frame', async () => frames().length >= 1);
      expect(frames()[0]).toMatchObject({ kind: 'startup', vin: VIN });
      const held = await db.knex('runs').where({ id: run.id }).first('lease_owner', 'state');
      expect(held).toEqual({ lease_owner: s.workerId, state: 'running' });
      await repos.runs.requestStop(dummy.id);
      expect((await finished(run)).outcome).toBe('stopped');
    } finally {
      await s.close();
    }
  });

  it('never drives one run from two schedulers', async () => {
    const runs = await Promise.all([0, 1, 2].map(() => dummyWithRun({ routeId: BACK_HOME.id, speed: 60 })));
    const a = scheduler();
    const b = scheduler();
    try {
      for (const { run } of runs) await finished(run);
      for (const { dummy, frames } of runs) {
        expect(broker.connects.get(dummy.deviceId)).toBe(1);
        expect(frames().filter((f) => f.kind === 'startup')).toHaveLength(1);
      }
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('fails a run with a message when there is no gateway or the device is refused, and when its dummy is deleted stops it', async () => {
    const { run: noGateway } = await dummyWithRun({ routeId: BACK_HOME.id });
    const s = scheduler({ mqttUrl: null });
    try {
      expect(await finished(noGateway)).toMatchObject({ outcome: 'failed', error: NO_GATEWAY });
    } finally {
      await s.close();
    }
    const refused = await dummyWithRun({ routeId: BACK_HOME.id });
    await repos.devices.rotateSecret(refused.dummy.deviceId);
    const deleted = await dummyWithRun({ routeId: DOWNTOWN.id, speed: 20 });
    const t = scheduler();
    try {
      expect(await finished(refused.run)).toMatchObject({ outcome: 'failed', error: expect.stringMatching(/^MQTT connection refused/) });
      await until('frames', async () => deleted.frames().length >= 3);
      await repos.dummies.delete(deleted.app.id, deleted.dummy.id);
      await until('the device to stop', async () => t.active() === 0);
      expect(deleted.frames().at(-1)!.kind).toBe('shutdown');
    } finally {
      await t.close();
    }
  });

  it('fails a run played to a broker that acknowledges frames the platform never stores; asks for the announced URL', async () => {
    // The test broker acknowledges every frame and stores none: like another broker on the default port.
    const { run } = await dummyWithRun({ routeId: BACK_HOME.id, speed: 60 });
    const asked: number[] = [];
    const s = scheduler({
      mqttUrl: null, resolveMqttUrl: async () => { asked.push(1); return broker.url; },
      storedFrames: (deviceId, from, to) => storedPassFrames(db.knex, deviceId, from, to),
    });
    try {
      const done = await finished(run);
      expect(done.outcome).toBe('failed');
      expect(done.error).toBe(notStored(broker.url, done.framesSent, 0));
      expect(asked.length).toBeGreaterThan(0);
    } finally {
      await s.close();
    }
  });
});
