// Batched, ordered, idempotent ingest: jobs (one per MQTT payload) wait at most `batchMs` or until
// `batchSize` frames are queued, then one transaction stores them and runs the stages. A job settles only
// after its batch commits, which is when the gateway sends the PUBACK.
import type { Knex } from 'knex';
import type { Bus, StoredEvent } from '../lib/bus.js';
import type { Logger } from '../lib/logger.js';
import type { Repositories } from '../db/index.js';
import type { GatewayMetrics } from './metrics.js';
import type { IngestedMessage, IngestJob, IngestStage, StageContext, StageEvents } from './ingest.types.js';
import type { PartRow } from '../db/fused.js';
import { runParts } from '../db/fused.js';
import { batchTransaction } from '../db/prepared.js';
import { assemble, deviceBatches, poisonLetters, splitJob, storedDeviceBatches } from './ingest.batch.js';
import { recordFeedBatch } from '../db/message-feed.js';
import { insertPart, storedBatch, type StoredRef } from '../db/repositories/ingest.repository.js';
import { ensurePartitions } from '../db/partitions.js';
import { DEAD_LETTER_PARTITIONS, MESSAGE_PARTITIONS } from '../db/retention/time-tables.js';

export type { IngestJob };

export interface IngestPipeline {
  /** Resolves once the job is committed (stored, or kept as dead letters); rejects when the database is down. */
  submit(job: IngestJob): Promise<void>;
  /** Frames waiting for a batch. */
  depth(): number;
  /** Stops taking jobs and waits for the queued ones to commit. */
  close(): Promise<void>;
}

export interface PipelineOptions {
  knex: Knex;
  repos: Repositories;
  stages: IngestStage[];
  /** Frames per batch (a batch holds whole payloads, so the last one may overshoot). */
  batchSize: number;
  /** ms the first queued frame may wait for others. */
  batchMs: number;
  metrics: GatewayMetrics;
  bus: Bus;
  log: Logger;
  /**
   * Batches committed at once, each lane holding a fixed share of the devices so a device's frames
   * stay in order (default 1; PGlite has one connection, so more only helps on PostgreSQL). While the others are
   * idle, a lane whose batch is due takes what every lane holds when it is a small part of a batch.
   */
  lanes?: number;
  /**
   * Whether a committed batch is recorded in the feed (message_feed, db/message-feed.ts), which the live stream of an
   * API without a gateway of its own reads; asked per batch (the gateway: feedFollowed). Default: always.
   */
  feed?: () => boolean;
}

interface Pending { job: IngestJob; size: number; at: number; resolve(): void; reject(err: Error): void }

/**
 * The lanes' waiting frames are taken together only while they are at most this share of a batch (25 frames of the
 * default 500): a batch's statements cost nearly as much for one frame as for hundreds, but while a batch holds every
 * lane, the frames that come meanwhile wait for it. A larger share (a quarter of a batch) put a high load into one
 * batch at a time: less database CPU, but a much higher publish → PUBACK p99 (docs/development/performance.md).
 */
const MERGED_SHARE = 20;

/**
 * A lane's waiting jobs, one queue per device (arrival order; the devices in the order they are next served), their
 * frames, its running batch and the timer of its window.
 */
interface Lane { devices: Map<string, Pending[]>; queued: number; running: Promise<void> | null; timer: NodeJS.Timeout | null }

/**
 * Lanes of devices (laneIndex), each at most one batch transaction at a time, its jobs in arrival order: a batch is
 * due once `batchSize` frames wait or the oldest has waited `batchMs`. A due lane takes what every lane holds, in one
 * transaction, when no other lane is running a batch and all of it is a small part of one (MERGED_SHARE): at a
 * trickle each lane's batch held a frame or two, one a window per lane, and each batch's statements cost about the
 * same whatever it holds. Under load the lanes are busy and each commits its own devices' frames.
 *
 * A batch takes its lane's devices in turn, one payload each per round (take): a device with a backlog (a flood, a
 * reconnect's upload) gets a share of each batch, not all of it, and another device's payload goes into the next batch
 * instead of waiting behind the backlog; the devices a full batch left out are served first in the next one.
 */
export function createIngestPipeline(o: PipelineOptions): IngestPipeline {
  const runBatch = batchRunner(o);
  const lanes: Lane[] = Array.from({ length: Math.max(1, o.lanes ?? 1) }, () => ({ devices: new Map(), queued: 0, running: null, timer: null }));
  const laneOf = (deviceId: string) => lanes[lanes.length === 1 ? 0 : laneIndex(deviceId, lanes.length)];
  let closed = false;

  /** When the lane's oldest waiting job came (the oldest of each device's is the first of its queue). */
  const oldest = (lane: Lane) => {
    let at = Infinity;
    for (const queue of lane.devices.values()) at = Math.min(at, queue[0].at);
    return at;
  };

  const schedule = (lane: Lane) => {
    if (lane.running || !lane.devices.size) return;
    if (!closed && lane.queued < o.batchSize) {
      if (lane.timer) return; // set for the oldest job: later ones are not due sooner
      const wait = oldest(lane) + o.batchMs - Date.now();
      if (wait > 0) {
        lane.timer = setTimeout(() => { lane.timer = null; schedule(lane); }, wait);
        return;
      }
    }
    const alone = lanes.every((l) => l === lane || !l.running) && lanes.reduce((n, l) => n + l.queued, 0) <= o.batchSize / MERGED_SHARE;
    const group = alone ? lanes.filter((l) => l.devices.size) : [lane];
    const batch = group.flatMap(take);
    const run = runBatch(batch).finally(() => {
      for (const l of group) l.running = null;
      for (const l of lanes) schedule(l);
    });
    for (const l of group) {
      if (l.timer) { clearTimeout(l.timer); l.timer = null; }
      l.running = run;
    }
  };

  /**
   * Up to batchSize frames of the lane's jobs (at least one), in rounds over its devices in their order, a device's
   * oldest job each round. A device whose next job does not fit takes no more this batch (its later jobs must not
   * overtake it); the devices served that still have jobs go behind the others, so the next batch starts with those
   * this one left out.
   */
  const take = (lane: Lane): Pending[] => {
    const batch: Pending[] = [];
    let size = 0;
    const served = new Set<string>();
    let round = [...lane.devices.keys()];
    while (round.length && size < o.batchSize) {
      const next: string[] = [];
      for (const deviceId of round) {
        const queue = lane.devices.get(deviceId)!;
        if (batch.length && size + queue[0].size > o.batchSize) continue;
        const p = queue.shift()!;
        batch.push(p);
        size += p.size;
        served.add(deviceId);
        if (queue.length) next.push(deviceId); else lane.devices.delete(deviceId);
        if (size >= o.batchSize) break;
      }
      round = next;
    }
    for (const deviceId of served) {
      const queue = lane.devices.get(deviceId);
      if (queue) { lane.devices.delete(deviceId); lane.devices.set(deviceId, queue); }
    }
    lane.queued -= size;
    return batch;
  };

  return {
    submit(job) {
      if (closed) return Promise.reject(new Error('the ingest pipeline is closed'));
      return new Promise<void>((resolve, reject) => {
        const lane = laneOf(job.deviceId);
        const size = Math.max(1, job.frames.length + job.deadLetters.length);
        const pending: Pending = { job, size, at: Date.now(), resolve, reject };
        const queue = lane.devices.get(job.deviceId);
        if (queue) queue.push(pending); else lane.devices.set(job.deviceId, [pending]);
        lane.queued += size;
        schedule(lane);
      });
    },
    depth: () => lanes.reduce((n, lane) => n + lane.queued, 0),
    async close() {
      closed = true;
      lanes.forEach(schedule);
      for (let running = lanes.map((l) => l.running); running.some(Boolean); running = lanes.map((l) => l.running)) await Promise.all(running);
    },
  };
}

/** A stable lane for a device id (FNV-1a over its characters). */
export function laneIndex(deviceId: string, lanes: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < deviceId.length; i++) h = Math.imul(h ^ deviceId.charCodeAt(i), 0x01000193);
  return (h >>> 0) % lanes;
}

/** The stages as run: alone, or consecutive planned ones fused (their statements in one round trip), named `a+b`. */
function stageSteps(stages: IngestStage[]): { fused: boolean; name: string; stages: IngestStage[] }[] {
  const steps: { fused: boolean; name: string; stages: IngestStage[] }[] = [];
  for (const stage of stages) {
    const last = steps.at(-1);
    if (stage.plan && last?.fused) { last.stages.push(stage); last.name += `+${stage.name}`; } else steps.push({ fused: Boolean(stage.plan), name: stage.name, stages: [stage] });
  }
  return steps;
}

/** Devices whose newest stored message the pipeline remembers (past it, it forgets them all and learns them again). */
const NEWEST_REMEMBERED = 100_000;

/**
 * Remembers each device's newest message of `stored` (by timestamp, then id: the order of messages_device_ts_id) where
 * it is newer than the one remembered.
 */
function rememberNewest(newest: Map<string, StoredRef>, stored: readonly IngestedMessage[]): void {
  if (newest.size > NEWEST_REMEMBERED) newest.clear();
  for (const m of stored) {
    const known = newest.get(m.deviceId);
    const t = m.timestamp.getTime();
    if (!known || t > known.ts.getTime() || (t === known.ts.getTime() && m.id > known.id)) newest.set(m.deviceId, { ts: m.timestamp, id: m.id });
  }
}

/** What commits a batch of jobs (settling each), shared by the lanes: one batch holds a device at a time. */
function batchRunner(o: PipelineOptions): (batch: Pending[]) => Promise<void> {
  const steps = stageSteps(o.stages);
  // each device's newest message committed here: the insert's hint for the device's newest (LATEST_MESSAGE); a
  // device's frames are in one batch at a time, and a hint another gateway or a deletion made stale only costs a longer read
  const newest = new Map<string, StoredRef>();
  const earlyStages = o.stages.filter((s) => s.early);

  const runBatch = async (batch: Pending[]) => {
    const settled = await commitSplitting(batch.map((p) => p.job));
    batch.forEach((p, i) => (settled[i] ? p.reject(settled[i]!) : p.resolve()));
  };

  /** Commits the jobs together; when that fails, alone, and a lone frame that still fails is dead-lettered. */
  const commitSplitting = async (jobs: IngestJob[]): Promise<(Error | null)[]> => {
    try {
      await commit(jobs);
      return jobs.map(() => null);
    } catch (err) {
      o.metrics.batchFailures.inc();
      o.log.warn({ err, jobs: jobs.length }, 'ingest batch failed; retrying its payloads one by one');
      if (!(await databaseUp())) return jobs.map(() => err as Error);
      // One at a time, in arrival order: a device's frames must not overtake each other.
      if (jobs.length > 1) return sequentially(jobs.map((j) => () => commitSplitting([j]).then((r) => r[0])));
      const parts = splitJob(jobs[0]);
      if (parts.length === 1) return [await keepAsDeadLetters(jobs[0], err as Error)];
      const results = await sequentially(parts.map((part) => () => commitSplitting([part]).then((r) => r[0])));
      return [results.find((r) => r) ?? null];
    }
  };

  const sequentially = async <T>(tasks: (() => Promise<T>)[]): Promise<T[]> => {
    const out: T[] = [];
    for (const task of tasks) out.push(await task());
    return out;
  };

  const databaseUp = () => o.knex.raw('select 1').then(() => true, () => false);

  const keepAsDeadLetters = async (job: IngestJob, err: Error): Promise<Error | null> => {
    try {
      await o.repos.ingest.insertDeadLetters(poisonLetters(job, err));
      o.metrics.refused.inc({ reason: 'storage' }, job.frames.length);
      return null;
    } catch (again) {
      return again as Error;
    }
  };

  /** Runs one step of the batch transaction, observing its time under its name. */
  const timed = async <T>(stage: string, step: () => Promise<T>): Promise<T> => {
    const started = performance.now();
    try {
      return await step();
    } finally {
      o.metrics.stageSeconds.observe({ stage }, (performance.now() - started) / 1000);
    }
  };

  /**
   * The stages in list order, their events stored after each; consecutive stages with a `plan` run their
   * statements in one round trip (db/fused.ts), timed as `a+b`, then each one's `after`, timed under its name.
   */
  const runStages = async (batch: StageContext, early: ReadonlyMap<IngestStage, PartRow[] | null>): Promise<StoredEvent[]> => {
    // each stage sees the rows of its own early read
    const ctx = (stage: IngestStage): StageContext => ({ ...batch, early: early.get(stage) });
    const events: StoredEvent[] = [];
    const store = async (produced: StageEvents) => {
      if (!Array.isArray(produced)) events.push(...produced.stored);
      else if (produced.length) events.push(...(await timed('events', () => o.repos.events.insert(produced, batch.trx, batch.leaseMs ?? null))));
    };
    for (const step of steps) {
      if (!step.fused) {
        const stage = step.stages[0];
        await store(await timed(stage.name, () => stage.apply(ctx(stage))));
        continue;
      }
      const plans = step.stages.map((stage) => stage.plan!(ctx(stage)));
      const rows = await timed(step.name, () => runParts(batch.trx, plans.map((p) => p.part)));
      for (const [k, stage] of step.stages.entries()) await store(await timed(stage.name, () => plans[k].after(rows[k])));
    }
    return events;
  };

  const commit = async (jobs: IngestJob[]) => {
    const { rows, messages, deadLetters, inBatchDuplicates } = assemble(jobs);
    const candidates = deviceBatches(messages, new Map());
    for (const stage of o.stages) await stage.prepare?.(candidates);
    const started = performance.now();
    // before the transaction: a partition is made (rarely: a new day, a late frame's) in a short transaction of its own
    await ensurePartitions(o.knex, MESSAGE_PARTITIONS, rows.map((r) => r.timestamp));
    await ensurePartitions(o.knex, DEAD_LETTER_PARTITIONS, deadLetters.map((r) => r.receivedAt));
    const { stored, events } = await batchTransaction(o.knex, async (trx) => {
      // one round trip: the insert, each device's newest stored timestamp before the batch, the stages' early reads
      const { inserted, latest, early } = await timed('insert', async () => {
        const [stored, ...reads] = rows.length
          ? await runParts(trx, [insertPart(rows, candidates.map((d) => d.deviceId), candidates.map((d) => newest.get(d.deviceId))),
            ...earlyStages.map((s) => s.early!(candidates))])
          : [null];
        await o.repos.ingest.insertDeadLetters(deadLetters, trx);
        return { ...storedBatch(stored, rows), early: new Map(earlyStages.map((s, k) => [s, reads[k] ?? null])) };
      });
      const devices = storedDeviceBatches(messages, inserted, latest);
      const events = devices.length ? await runStages({ trx, devices, leaseMs: o.bus.handOffLeaseMs() }, early) : [];
      const stored = devices.flatMap((d) => d.messages);
      // Last, so the feed number (locked until commit) is held only for the commit.
      if (o.feed?.() ?? true) await timed('feed', () => recordFeedBatch(trx, stored));
      return { stored, events };
    });
    rememberNewest(newest, stored);
    o.metrics.commitSeconds.observe((performance.now() - started) / 1000);
    o.metrics.batchSize.observe(rows.length + inBatchDuplicates + deadLetters.length);
    o.metrics.stored.inc(stored.length);
    o.metrics.duplicates.inc(rows.length + inBatchDuplicates - stored.length);
    // Committed: a failing listener must not make the batch look failed (it would be retried).
    try {
      o.bus.publishMessages(stored.map((m) => ({ id: m.id, deviceId: m.deviceId, timestamp: m.timestamp, data: m.data })));
      o.bus.publishEvents(events);
    } catch (err) {
      o.log.error({ err }, 'a live listener failed on committed messages');
    }
  };

  return runBatch;
}
