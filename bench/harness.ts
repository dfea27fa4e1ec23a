// What every bench scenario needs: a running platform (as `drivewire serve` starts it) on fresh
// storage, provisioned devices, and an MQTT load generator on its own thread.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { loadConfig } from '../lib/config.js';
import { createLogger, silentLogger } from '../lib/logger.js';
import { startPlatform, type Platform } from '../bin/platform.js';

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
  /** Provisions n devices (authorized for and registered with the default application). */
  devices(n: number): Promise<{ id: string; secret: string }[]>;
  close(): Promise<void>;
}

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
  return {
    platform, mqttUrl, database: platform.db.kind,
    async devices(n) {
      const { repos } = platform;
      const app = platform.credentials.application;
      const owner = await repos.devices.createOwner({ name: 'bench' });
      const out: { id: string; secret: string }[] = [];
      for (let i = 0; i < n; i++) {
        const { device, secret } = await repos.devices.provision({ name: `bench ${i + 1}`, ownerId: owner.id });
        await repos.devices.authorize(device.id, app.id);
        await repos.devices.register(app.id, device.id);
        out.push({ id: device.id, secret });
      }
      return out;
    },
    async close() {
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
}

export interface LoadResult {
  /** Acknowledged in the measured window; ackedTotal includes the warm-up. */
  acked: number;
  ackedTotal: number;
  errors: number;
  measuredMs: number;
  /** ms from publish to PUBACK of each frame acknowledged in the window. */
  latencies: Float64Array;
}

export function runLoad(o: LoadOptions): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL('./load.worker.js', import.meta.url), { workerData: { frameBytes: 0, ...o } });
    worker.once('message', (m: LoadResult) => resolve(m));
    worker.once('error', reject);
    worker.once('exit', (code) => { if (code !== 0) reject(new Error(`load generator exited with code ${code}`)); });
  });
}

/** The q-quantile (0..1) of the values, by nearest rank; NaN when there are none. */
export function quantile(values: Float64Array, q: number): number {
  if (!values.length) return NaN;
  const sorted = Float64Array.from(values).sort();
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

export const round = (x: number, digits = 1) => Math.round(x * 10 ** digits) / 10 ** digits;
