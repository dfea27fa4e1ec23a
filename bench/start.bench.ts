// Start scenario (targets: embedded start ≤ 5 s to /health, idle RSS ≤ 300 MB). The real `drivewire serve` (its
// launcher with the shebang's memory settings, the compiled build when current) is started on a new data directory,
// stopped, and started again on it: each start timed from the spawn to its first `/health` answer, then left idle
// while its RSS is read every 10 s up to --duration seconds after the spawn (V8 gives back the young generation the
// start grew some 30–60 s in: `--duration 60` reads the settled figure). Baseline in the same run: PGlite with
// PostGIS alone (bare-pglite.child.js), configured as the platform configures it, on a new directory and again.
// With --database-url the platform starts on that PostgreSQL (its migrations on the first start) and has no baseline.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { PGLITE_CONF } from '../db/connection.js';
import { slimBundle } from '../db/pglite-postgis.js';
import { apiUrlOf } from '../bin/commands/serve.js';
import { LAUNCHER, launchedLike } from './child.js';
import { machine, round } from './harness.js';
import type { BenchOptions, BenchScenario } from './types.js';
import { embeddedDbDir } from '../lib/config.js';

const BARE_PGLITE = fileURLToPath(new URL('./bare-pglite.child.js', import.meta.url));
const START_BOUND_MS = 180_000;

interface Start { readySeconds: number; rssMB: Record<string, number> }

/** The last reading: the RSS once idle for the scenario's seconds. */
const idleRss = (s: Start) => Object.values(s.rssMB).at(-1)!;

/** The process's RSS in MB; an error naming how it ended if it has. */
function rssOf(child: ChildProcess): number {
  if (child.exitCode !== null || child.signalCode !== null) throw new Error(`the started process ended (${child.exitCode ?? child.signalCode}) while idle`);
  const status = fs.readFileSync(`/proc/${child.pid}/status`, 'utf8');
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? NaN) / 1024;
}

/** Seconds after the spawn at which the RSS is read: every 10 s up to `idleS`, and at `idleS`. */
export function readingTimes(idleS: number): number[] {
  const times = [];
  for (let t = 10; t < idleS; t += 10) times.push(t);
  times.push(idleS);
  return times;
}

const exited = (child: ChildProcess) => new Promise<void>((resolve) => {
  if (child.exitCode !== null || child.signalCode !== null) resolve(); else child.once('exit', () => resolve());
});

/** Starts a process, waits until `ready` says it is, reads its RSS while idle, stops it (SIGTERM). */
async function timedStart(child: ChildProcess, ready: (child: ChildProcess) => Promise<void>, idleS: number): Promise<Start> {
  const t0 = performance.now();
  try {
    await ready(child);
    const readySeconds = (performance.now() - t0) / 1000;
    const rssMB: Record<string, number> = {};
    for (const t of readingTimes(idleS)) {
      const wait = t0 + t * 1000 - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      rssMB[String(t)] = round(rssOf(child), 0);
    }
    return { readySeconds: round(readySeconds, 2), rssMB };
  } finally {
    child.kill('SIGTERM');
    await exited(child);
  }
}

/** `drivewire serve` on `dataDir` (ports chosen by the system), ready at its first `/health` 200. */
function platformStart(o: BenchOptions, dataDir: string, idleS: number): Promise<Start> {
  const args = ['serve', '--data-dir', dataDir, '--http-port', '0', '--mqtt-port', '0', '--log-level', 'warn',
    ...(o.databaseUrl ? ['--database-url', o.databaseUrl] : [])];
  const child = spawn(LAUNCHER, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  return timedStart(child, async (c) => {
    const url = await apiUrlOf(c, START_BOUND_MS);
    for (;;) {
      const res = await fetch(`${url}/health`).catch(() => null);
      if (res?.ok) return;
      await new Promise((r) => setTimeout(r, 20));
    }
  }, idleS);
}

/** PGlite with PostGIS alone on `dataDir`, ready once it printed so. */
function bareStart(dataDir: string, bundle: URL, idleS: number): Promise<Start> {
  const bare = launchedLike(BARE_PGLITE, [JSON.stringify({ dataDir, bundle: bundle.href, conf: PGLITE_CONF })]);
  const child = spawn(bare.command, bare.args, { stdio: ['ignore', 'pipe', 'inherit'] });
  return timedStart(child, (c) => new Promise<void>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`bare PGlite was not ready within ${START_BOUND_MS} ms`)), START_BOUND_MS);
    c.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
      if (out.includes('ready\n')) { clearTimeout(timer); c.stdout!.resume(); resolve(); }
    });
    c.once('exit', (code) => { clearTimeout(timer); reject(new Error(`bare PGlite exited (${code}) before it was ready`)); });
  }), idleS);
}

/** A new start on an empty directory, then a restart on it; the directory removed after. */
async function startTwice(start: (dir: string) => Promise<Start>): Promise<{ firstStart: Start; restart: Start }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-bench-start-'));
  try {
    const firstStart = await start(dir);
    const restart = await start(dir);
    return { firstStart, restart };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

export const startScenario: BenchScenario = {
  name: 'start',
  description: 'drivewire serve started on a new data directory, then restarted: seconds to /health, RSS while idle; ratio to PGlite + PostGIS alone',
  async run(o) {
    const idleS = o.durationS;
    const platform = await startTwice((dir) => platformStart(o, dir, idleS));
    let baselines: Record<string, unknown> | null = null;
    if (o.baselines !== false && !o.databaseUrl) {
      const bundle = await slimBundle();
      const bare = await startTwice((dir) => bareStart(embeddedDbDir(dir), bundle, idleS));
      baselines = {
        barePglite: bare,
        ratioRestartSeconds: round(platform.restart.readySeconds / bare.restart.readySeconds, 2),
        ratioRestartIdleRss: round(idleRss(platform.restart) / idleRss(bare.restart), 2),
      };
    }
    return {
      scenario: 'start',
      database: o.databaseUrl ? 'pg' : 'pglite',
      idleSeconds: idleS,
      platform,
      baselines: baselines ?? { none: o.databaseUrl ? 'PostgreSQL runs apart: the platform alone is measured' : 'skipped (--no-baselines)' },
      machine: machine(),
    };
  },
};
