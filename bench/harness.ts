// What every bench scenario needs: a running platform (as `drivewire serve` starts it) on fresh
// storage, provisioned devices, and an MQTT load generator on its own thread.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { loadConfig } from '../lib/config.js';
import { createLogger, silentLogger } from '../lib/logger.js';
import { startPlatform, type Platform } from '../bin/platform.js';
import { startProcessMonitor, workerThreadFigures, type ProcessFigures, type ProcessMonitor } from './processes.js';
import { versions, type Versions } from './versions.js';

export interface BenchPlatformOptions {
  /** PostgreSQL + PostGIS; default: embedded PGlite in a temporary data directory. */
  databaseUrl?: string | null;
  batchSize?: number;
  batchMs?: number;
  logLevel?: string;
  /** More configuration flags, as `loadConfig` takes them. */
  flags?: Record<string, unknown>;
}

export interface BenchPlatform {
  platform: Platform;
  mqttUrl: string;
  database: 'pg' | 'pglite';
  /** The Enterprise application the bench devices are registered with. */
  app: { id: string; secret: string };
  /** Provisions n devices (authorized for and registered with the default application). */
  devices(n: number): Promise<{ id: string; secret: string }[]>;
  /** CPU and RSS of the bench process, the load generator and PostgreSQL's backends, over windows (processes.ts). */
  monitor: ProcessMonitor;
  /** Node, Aedes, mqtt, the database client, PostgreSQL and PostGIS versions. */
  versions(): Promise<Versions>;
  /** A gateway metric's value now (sum over its series; 0 when absent), from what /metrics serves. */
  metric(name: string): Promise<number>;
  /** The gateway's metrics text (Prometheus exposition, as /metrics serves it). */
  metrics(): Promise<string>;
  close(): Promise<void>;
}

/**
 * Devices provisioned per transaction: one commit per device (its statements autocommitted) made provisioning the
 * connections scenario's thousands of devices take minutes; in transactions of this many, the same repository calls
 * are several times faster.
 */
const PROVISION_CHUNK = 250;

export async function startBenchPlatform(o: BenchPlatformOptions = {}): Promise<BenchPlatform> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'drivewire-bench-'));
  const config = loadConfig({
    dataDir, databaseUrl: o.databaseUrl ?? undefined, httpPort: 0, host: '127.0.0.1', mqttPort: 0, mqttHost: '127.0.0.1',
    logLevel: o.logLevel ?? 'silent', ingestBatchSize: o.batchSize, ingestBatchMs: o.batchMs, ...o.flags,
  }, {});
  const log = config.logLevel === 'silent' ? silentLogger : createLogger(config.logLevel, process.stderr as never);
  const platform = await startPlatform(config, log);
  const mqttUrl = platform.parts.find((p) => p.urls?.mqtt)?.urls?.mqtt;
  if (!mqttUrl) throw new Error('the platform started without the MQTT gateway');
  // On a database used before, this temporary data dir does not hold the default application's secret
  // (nothing rotates it at start): the bench then uses an application of its own.
  const app = platform.credentialsFile.application
    ?? await platform.repos.applications.create({ name: `bench ${new Date().toISOString()}`, kind: 'enterprise' });
  const monitor = await startProcessMonitor({ databaseUrl: platform.db.kind === 'pg' ? o.databaseUrl ?? null : null });
  const gateway = platform.parts.find((p) => p.name === 'gateway');
  const metrics = async () => (await gateway?.metrics?.()) ?? '';
  return {
    platform, mqttUrl, database: platform.db.kind, app, monitor,
    async devices(n) {
      const { repos } = platform;
      const owner = await repos.devices.createOwner({ name: 'bench' });
      const out: { id: string; secret: string }[] = [];
      for (let from = 0; from < n; from += PROVISION_CHUNK) {
        await platform.db.knex.transaction(async (trx) => {
          for (let i = from; i < Math.min(n, from + PROVISION_CHUNK); i++) {
            const { device, secret } = await repos.devices.provision({ name: `bench ${i + 1}`, ownerId: owner.id }, trx);
            await repos.devices.authorize(device.id, app.id, trx);
            await repos.devices.register(app.id, device.id, trx);
            out.push({ id: device.id, secret });
          }
        });
      }
      return out;
    },
    versions: () => versions(platform.db.knex, platform.db.kind),
    metrics,
    metric: async (name) => sample(await metrics(), name) || 0,
    async close() {
      await monitor.close();
      await platform.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export interface LoadOptions {
  url: string;
  devices: { id: string; secret: string }[];
  /** ms measured, after `warmupMs` not measured. */
  durationMs: number;
  warmupMs: number;
  /** Publishes in flight per device. */
  window: number;
  /** Frames per second per device; 0 = as fast as the window allows. */
  rate: number;
  /** Extra padding per frame, bytes (0 = a ~300-byte telemetry frame). */
  frameBytes?: number;
  /** Also return every PUBACK's wall-clock time (LoadResult.ackTimes). */
  ackTimes?: boolean;
}

export interface LoadResult {
  /** Acknowledged in the measured window; ackedTotal includes the warm-up. */
  acked: number;
  ackedTotal: number;
  errors: number;
  measuredMs: number;
  /** ms from publish to PUBACK of each frame acknowledged in the window. */
  latencies: Float64Array;
  /** With LoadOptions.ackTimes: epoch ms of every PUBACK, warm-up included, in order; else empty. */
  ackTimes: Float64Array;
  /** The measured window on the wall clock (epoch ms, as the frames' `ts`); NaN where the worker never announced it. */
  windowEpochMs: { from: number; to: number };
  /** The platform's event loop delay over the whole load (warm-up included), ms. */
  eventLoopDelayMs?: { p50: number; p99: number; max: number };
  /** Each process's CPU and RSS over the measured window, when runLoad was given a monitor. */
  processes?: ProcessFigures;
}

/** The worker's last message: its counts, and its own thread's CPU over the measured window. */
type LoadDone = Omit<LoadResult, 'eventLoopDelayMs' | 'processes'> & { type: 'done'; thread: Parameters<typeof workerThreadFigures>[0] };

/**
 * Runs the load generator on its own thread; with a monitor, marks the measured window the worker announces.
 * `onMeasuring` is called when the measured window starts (after the warm-up).
 */
export function runLoad(o: LoadOptions, monitor?: ProcessMonitor, onMeasuring?: () => void): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL('./load.worker.js', import.meta.url), { workerData: { frameBytes: 0, ...o } });
    let from: ReturnType<ProcessMonitor['mark']> | null = null;
    let to: ReturnType<ProcessMonitor['mark']> | null = null;
    const windowEpochMs = { from: NaN, to: NaN };
    // The platform's main thread while the load runs: how long a ready callback waits (decoding, SQL results, PUBACKs).
    const delay = monitorEventLoopDelay({ resolution: 10 });
    delay.enable();
    const lag = () => {
      delay.disable();
      return { p50: round(delay.percentile(50) / 1e6), p99: round(delay.percentile(99) / 1e6), max: round(delay.max / 1e6) };
    };
    worker.on('message', (m: { type: 'measuring' } | { type: 'measured' } | LoadDone) => {
      if (m.type === 'measuring') { windowEpochMs.from = Date.now(); from = monitor?.mark() ?? null; onMeasuring?.(); }
      else if (m.type === 'measured') { windowEpochMs.to = Date.now(); to = monitor?.mark() ?? null; }
      else {
        const { type, thread, ...counts } = m;
        const eventLoopDelayMs = lag();
        const window = from && to ? Promise.all([from, to]) : Promise.resolve(null);
        window.then((marks) => resolve({
          ...counts, eventLoopDelayMs, windowEpochMs, ...(marks && monitor ? { processes: monitor.figures(marks[0], marks[1], workerThreadFigures(thread)) } : {}),
        }), reject);
      }
    });
    worker.once('error', (err) => { lag(); reject(err); });
    worker.once('exit', (code) => { if (code !== 0) { lag(); reject(new Error(`load generator exited with code ${code}`)); } });
  });
}

/** The q-quantile (0..1) of the values, by nearest rank; NaN when there are none. */
export function quantile(values: Float64Array, q: number): number {
  if (!values.length) return NaN;
  const sorted = Float64Array.from(values).sort();
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

export const round = (x: number, digits = 1) => Math.round(x * 10 ** digits) / 10 ** digits;

/** A latency distribution as the results print it (ms): p50, p99 and max. */
export const spread = (values: Float64Array) =>
  ({ p50: round(quantile(values, 0.5)), p99: round(quantile(values, 0.99)), max: round(quantile(values, 1)) });

/** The machine a result was measured on (every scenario's `machine`). */
export const machine = () => ({
  cpus: os.cpus().length, cpu: os.cpus()[0]?.model, node: process.version, loadAverage1m: round(os.loadavg()[0], 2),
});

/** A metric's value from Prometheus text (first sample of that exact name). */
export function sample(text: string, name: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.split(' ')[1]) : NaN;
}

/**
 * Mean ms per batch of each step of the batch transaction (drivewire_ingest_stage_seconds): where a commit's
 * time goes. A stage that produced events adds their insert to `events`.
 */
function stageMeans(text: string, batches: number): Record<string, number> {
  const means: Record<string, number> = {};
  for (const line of text.split('\n')) {
    const m = /^drivewire_ingest_stage_seconds_sum\{stage="([^"]+)"\} (\S+)$/.exec(line);
    if (m) means[m[1]] = round((Number(m[2]) / batches) * 1000, 2);
  }
  return means;
}

/** The gateway's batch counters from its metrics text (cumulative since it started). */
export interface BatchTotals { batches: number; frames: number; commitSeconds: number }

export function batchTotals(metrics: string): BatchTotals {
  return {
    batches: sample(metrics, 'drivewire_ingest_batch_size_count') || 0,
    frames: sample(metrics, 'drivewire_ingest_batch_size_sum') || 0,
    commitSeconds: sample(metrics, 'drivewire_ingest_commit_seconds_sum') || 0,
  };
}

const NO_BATCHES: BatchTotals = { batches: 0, frames: 0, commitSeconds: 0 };

/** The batches between two readings of batchTotals: how many, their mean frames and mean commit ms. */
export function batchesBetween(from: BatchTotals, to: BatchTotals) {
  const batches = to.batches - from.batches;
  return {
    batches,
    meanBatchFrames: batches ? round((to.frames - from.frames) / batches) : null,
    meanCommitMs: batches ? round(((to.commitSeconds - from.commitSeconds) / batches) * 1000, 2) : null,
  };
}

/** The gateway's batch figures from its metrics text: batches, mean frames and commit ms, mean ms per step. */
export function batchFigures(metrics: string) {
  const figures = batchesBetween(NO_BATCHES, batchTotals(metrics));
  return { ...figures, meanStageMs: stageMeans(metrics, figures.batches) };
}
