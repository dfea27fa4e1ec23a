// PostgreSQL's instructions a frame on the ingest path, counted by callgrind: repeatable on a noisy machine, where
// timings of the same tree move widely from one run to the next. Not a `drivewire bench` scenario: it needs a
// PostgreSQL cluster run under valgrind (docs/development/benchmarks.md). Run it with each tree's own copy
// to compare trees on the same template database.
//
//   npx tsx bench/replay-instructions.ts --cluster postgres://postgres@127.0.0.1:5499 --template dw_tpl \
//     --callgrind-dir /tmp/pgcg [--stages vehicles,trips] [--frames 2] [--rounds 2,6] [--floor]
//
// For each of the two round counts: a fresh copy of the template, this tree's ingest pipeline (its stages, one lane, a
// pool of one connection, so one backend does all the work) storing `rounds` batches of one payload of `frames` frames
// from every device of the template (the bench's frames, timestamps after the device's newest), then the backend's
// instruction total from the callgrind file it writes when it exits. The difference between the two runs, divided by
// the frames between them, leaves out connecting, first plans and caches: instructions a frame in steady state.
//
// With --floor, the same for the storing floor (bench/baselines.ts): the same frames, each COPYed unchanged into a copy
// of `messages` (same indexes), one COPY a batch on a backend of its own, so that the count comes with its baseline,
// counted the same way on the same template: `ratioToFloor`, the platform's instructions a frame over the floor's.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { randomUUID } from 'node:crypto';
import knexFactory, { type Knex } from 'knex';
import pg from 'pg';
import { loadConfig } from '../lib/config.js';
import { createBus } from '../lib/bus.js';
import { silentLogger } from '../lib/logger.js';
import { repositories } from '../db/index.js';
import { createIngestPipeline } from '../gateway/ingest.pipeline.js';
import { createGatewayMetrics } from '../gateway/metrics.js';
import { uplinkJob } from '../gateway/uplink.js';
import { INGEST_STAGES } from '../gateway/ingest.stages.js';
import { frameBody } from './load.common.js';
import { copyLine, copyTable } from './baselines.js';

const { values: args } = parseArgs({
  options: {
    cluster: { type: 'string' }, template: { type: 'string' }, 'callgrind-dir': { type: 'string' },
    stages: { type: 'string' }, frames: { type: 'string', default: '2' }, rounds: { type: 'string', default: '2,6' },
    floor: { type: 'boolean', default: false },
  },
});
if (!args.cluster || !args.template || !args['callgrind-dir']) {
  process.stderr.write('usage: replay-instructions.ts --cluster URL --template DB --callgrind-dir DIR [--stages a,b] [--frames N] [--rounds R1,R2] [--floor]\n');
  process.exit(2);
}
const FRAMES = Number(args.frames);
const [R1, R2] = args.rounds!.split(',').map(Number);
const only = args.stages === undefined ? null : args.stages.split(',').filter(Boolean);

/**
 * The replay's frames are the load generator's (frameBody), numbered from SEQ0 on: past any frame id a bench run
 * stored, and a multiple of the periods of their speeds, latitudes and headings (120, 1,000, 360), so the same frames.
 */
const SEQ0 = 9_000_000;

async function instructionsOf(pid: number): Promise<number> {
  for (let t = 0; t < 3000; t++) {
    try {
      const m = /^totals: (\d+)/m.exec(readFileSync(`${args['callgrind-dir']}/cg.${pid}`, 'utf8'));
      if (m) return Number(m[1]);
    } catch { /* not written yet */ }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no callgrind totals for backend ${pid} in ${args['callgrind-dir']} (is the cluster run under callgrind with --callgrind-out-file=DIR/cg.%p?)`);
}

/** The template's devices that have messages, each with its newest timestamp. */
type Device = { id: string; t: Date };

/**
 * `work` on a fresh copy of the template, over a knex of one connection (its backend's pid given) and the devices;
 * the copy is dropped after.
 */
async function onCopy<T>(name: string, work: (knex: Knex, url: string, pid: number, devices: Device[]) => Promise<T>): Promise<T> {
  const admin = new pg.Client({ connectionString: `${args.cluster}/postgres` });
  await admin.connect();
  const db = `dw_replay_${process.pid}_${name}`;
  await admin.query(`CREATE DATABASE ${db} TEMPLATE ${args.template}`);
  const url = `${args.cluster}/${db}`;
  const knex = knexFactory({ client: 'pg', connection: { connectionString: url }, pool: { min: 1, max: 1 } });
  try {
    const pid = (await knex.raw('SELECT pg_backend_pid() AS p')).rows[0].p as number;
    await knex.raw('SET jit = off');
    const devices = (await knex.raw(`SELECT d.id, max(m.ts) AS t FROM devices d JOIN messages m ON m.device_id = d.id
      GROUP BY d.id ORDER BY d.id`)).rows as Device[];
    if (!devices.length) throw new Error(`the template ${args.template} has no device with messages`);
    return await work(knex, url, pid, devices);
  } finally {
    await knex.destroy().catch(() => undefined);
    await admin.query(`DROP DATABASE IF EXISTS ${db}`);
    await admin.end();
  }
}

/** The replay's first timestamp: past every device's newest message. */
const baseOf = (devices: Device[]) => Math.max(...devices.map((d) => new Date(d.t).getTime())) + 1000;
/** Round `r`'s frames of the device at `i`, as the load generator's. */
const framesOf = (i: number, r: number, base: number) =>
  Array.from({ length: FRAMES }, (_, k) => frameBody(i, SEQ0 + r * FRAMES + k, base + (r * FRAMES + k) * 200 + i));

/** This tree's ingest pipeline storing `rounds` batches: frames, frames stored, stages, the backend's instructions. */
function run(rounds: number) {
  return onCopy(`${rounds}`, async (knex, _url, pid, devices) => {
    const config = loadConfig({}, {});
    const repos = repositories(knex);
    const stages = INGEST_STAGES.map((make) => make({ config, knex, repos, log: silentLogger })).filter((s) => !only || only.includes(s.name));
    const pipeline = createIngestPipeline({
      knex, repos, stages, batchSize: devices.length * FRAMES, batchMs: 60_000, bus: createBus(), log: silentLogger, lanes: 1,
      metrics: createGatewayMetrics({ connectedClients: () => 0, queueDepth: () => 0 }),
    });
    const base = baseOf(devices);
    for (let r = 0; r < rounds; r++) {
      // a batch: every device's payload, submitted at once (the batch size is reached by the last)
      const jobs = devices.map((d, i) => uplinkJob(d.id, `devices/${d.id}/frames`, Buffer.from(JSON.stringify(framesOf(i, r, base))),
        262_144, new Date(base + r * FRAMES * 200)).job);
      await Promise.all(jobs.map((j) => pipeline.submit(j)));
    }
    await pipeline.close();
    for (const s of stages) await s.close?.();
    const stored = Number((await knex.raw('SELECT count(*) AS n FROM messages WHERE ts >= ?', [new Date(base)])).rows[0].n);
    await knex.destroy();
    return { frames: rounds * devices.length * FRAMES, stored, stages: stages.map((s) => s.name), instructions: await instructionsOf(pid) };
  });
}

/**
 * The storing floor over `rounds` batches of the same frames: each frame's JSON COPYed as it is (no location, as the
 * floor does) into a copy of messages, one COPY a batch, on the copy's own connection; rows stored and that backend's
 * instructions.
 */
function floorRun(rounds: number) {
  return onCopy(`floor_${rounds}`, async (knex, url, _pid, devices) => {
    const sink = await copyTable({ databaseUrl: url, knex }, 1);
    let pid: number;
    let stored: number;
    try {
      const { rows } = await knex.raw(`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()
        AND backend_type = 'client backend'`);
      if (rows.length !== 1) throw new Error(`expected the COPY's one backend, found ${rows.length}`);
      pid = rows[0].pid as number;
      const base = baseOf(devices);
      for (let r = 0; r < rounds; r++) {
        let text = '';
        devices.forEach((d, i) => framesOf(i, r, base).forEach((f) => {
          const { ts } = f as { ts: number };
          text += copyLine(randomUUID(), d.id, new Date(ts).toISOString(), JSON.stringify(f), null);
        }));
        await sink.copy(0, text);
      }
      stored = await sink.rows();
    } finally {
      await sink.close(); // the COPY's backend exits and writes its counts
    }
    return { frames: rounds * devices.length * FRAMES, stored, instructions: await instructionsOf(pid) };
  });
}

/** Instructions a frame in steady state: the difference of two runs over the frames between them. */
const perFrame = (a: { frames: number; instructions: number }, b: { frames: number; instructions: number }) =>
  Math.round((b.instructions - a.instructions) / (b.frames - a.frames));

const a = await run(R1);
const b = await run(R2);
if (a.stored !== a.frames || b.stored !== b.frames) throw new Error(`stored ${a.stored}/${a.frames} and ${b.stored}/${b.frames} frames`);
const instructionsPerFrame = perFrame(a, b);
let floor: { instructionsPerRow: number } | undefined;
if (args.floor) {
  const fa = await floorRun(R1);
  const fb = await floorRun(R2);
  if (fa.stored !== fa.frames || fb.stored !== fb.frames) throw new Error(`the floor stored ${fa.stored}/${fa.frames} and ${fb.stored}/${fb.frames} rows`);
  floor = { instructionsPerRow: perFrame(fa, fb) };
}
process.stdout.write(`${JSON.stringify({
  template: args.template, stages: b.stages, framesPerBatch: b.frames / R2, rounds: [R1, R2], instructionsPerFrame,
  ...(floor ? { floor, ratioToFloor: Math.round((instructionsPerFrame / floor.instructionsPerRow) * 100) / 100 } : {}),
})}\n`);
