// History scenario: the same figures on an empty database and on one holding a long history, in one run on one
// PostgreSQL database: first with only the API's target device's 20,000 messages stored, then after preloading
// --messages messages (default 20,000,000) over 1,000 devices and 30 days, made in SQL (generate.ts). The figures:
// ingest as the ingest scenario measures it (frames/s stored, publish→commit), the API's messages and trips pages of
// the target device timed as the api scenario times them, bytes per message, and, on the loaded database, dropping
// the oldest day of messages while devices publish (history.drop.ts). Each loaded figure is beside its empty one, with
// the ratio and its goal.
import type { Knex } from 'knex';
import { performance } from 'node:perf_hooks';
import { hammer } from './api.bench.js';
import { generateMessages } from './generate.js';
import { dropOldestDayUnderLoad } from './history.drop.js';
import { machine, round, runLoad, spread, startBenchPlatform, type BenchPlatform } from './harness.js';
import { benchScenario, type BenchOptions } from './types.js';

export const HISTORY_MESSAGES = 20_000_000;
/** Devices the history is spread over; the first is the API's target, the load's devices are among the others. */
export const HISTORY_DEVICES = 1000;
/** Messages of the API's target device, stored before the empty measurement. */
export const TARGET_MESSAGES = 20_000;
const DAYS = 30;
const DAY_MS = 86_400_000;
/** Devices whose history one statement makes: a statement of a few million rows, not one of all of them. */
const GENERATE_CHUNK = 100;
export const HISTORY_GOALS = { ingestRatio: 0.9, apiP99Ratio: 1.5, bytesPerMessage: 450 };

type Device = { id: string; secret: string };

/** All-in bytes of messages (every partition's table, indexes and TOAST: the partitioned table holds none) over its rows. */
async function bytesPerMessage(knex: Knex): Promise<{ messages: number; bytes: number; bytesPerMessage: number }> {
  const { rows } = await knex.raw(`SELECT (SELECT count(*) FROM messages)::float8 AS n,
    coalesce((SELECT sum(pg_total_relation_size(relid)) FROM pg_partition_tree('messages')), 0)::float8 AS bytes`);
  const { n, bytes } = rows[0] as { n: number; bytes: number };
  return { messages: n, bytes, bytesPerMessage: n ? Math.round(bytes / n) : 0 };
}

/** Ingest as the ingest scenario runs it; frames stored counted by timestamp from the load's start (history is older). */
async function ingest(bench: BenchPlatform, o: BenchOptions, devices: Device[]) {
  const since = new Date();
  const load = await runLoad({
    url: bench.mqttUrl, devices, durationMs: o.durationS * 1000, warmupMs: o.warmupS * 1000, window: o.window, rate: o.rate ?? 0,
  });
  const [{ n }] = await bench.platform.db.knex('messages').whereIn('device_id', devices.map((d) => d.id))
    .where('ts', '>=', since).count({ n: '*' });
  return {
    framesStoredPerSecond: round(load.acked / (load.measuredMs / 1000), 0),
    publishToCommitMs: spread(load.latencies),
    framesAcknowledged: load.ackedTotal,
    framesStored: Number(n),
    publishErrors: load.errors,
  };
}

/** The target device's first page of messages and of trips, each warmed for a second, then timed for --duration. */
async function api(bench: BenchPlatform, o: BenchOptions, target: Device) {
  const auth = { authorization: `Basic ${Buffer.from(`${bench.app.id}:${bench.app.secret}`).toString('base64')}` };
  const base = `${bench.platform.apiUrl}/api/v1/devices/${target.id}`;
  const timed = async (url: string) => { await hammer(url, auth, 1); return hammer(url, auth, o.durationS, o.apiRate); };
  return { messages: await timed(`${base}/messages?limit=20`), trips: await timed(`${base}/trips`) };
}

/** Every figure but the drop, on the database as it is. */
async function measure(bench: BenchPlatform, o: BenchOptions, target: Device, loadDevices: Device[]) {
  const requests = await api(bench, o, target);
  return { api: requests, ingest: await ingest(bench, o, loadDevices), storage: await bytesPerMessage(bench.platform.db.knex) };
}

/** `devices` get `perDevice` messages each over the 30 days from `start`, GENERATE_CHUNK devices a statement, then vacuumed; seconds taken. */
async function preload(knex: Knex, devices: Device[], perDevice: number, start: Date): Promise<{ messages: number; seconds: number }> {
  const started = performance.now();
  let messages = 0;
  for (let i = 0; i < devices.length && perDevice > 0; i += GENERATE_CHUNK) {
    const ids = devices.slice(i, i + GENERATE_CHUNK).map((d) => d.id);
    messages += await generateMessages(knex, { devices: ids, messages: perDevice, days: DAYS, start });
  }
  await vacuumMessages(knex);
  return { messages, seconds: round((performance.now() - started) / 1000, 1) };
}

/**
 * VACUUM of the stored messages (generate.ts has analyzed them): a history this old has been vacuumed by now, its pages
 * all-visible (index-only scans), and no autovacuum of the preload's millions of inserts runs during the measurements.
 * Of a partitioned messages, only the partitions with rows: the empty ones ahead of now are left unvacuumed and
 * unanalyzed, as the platform leaves them (db/connection.ts autoAnalyze).
 */
async function vacuumMessages(knex: Knex): Promise<void> {
  const { rows } = await knex.raw(`SELECT c.relname AS name FROM pg_partition_tree('messages') t JOIN pg_class c ON c.oid = t.relid
    WHERE t.isleaf AND c.reltuples > 0`);
  const tables = (rows as { name: string }[]).map((r) => r.name);
  await knex.raw(`VACUUM ${tables.length ? tables.join(', ') : 'messages'}`);
}

const ratio = (loaded: number, empty: number) => (empty ? round(loaded / empty, 2) : null);

async function run(o: BenchOptions) {
  if (!o.databaseUrl) throw new Error('the history scenario needs PostgreSQL (--database-url)');
  const total = o.messages ?? HISTORY_MESSAGES;
  const bench = await startBenchPlatform({ databaseUrl: o.databaseUrl, batchSize: o.batchSize, batchMs: o.batchMs });
  try {
    const [target, ...others] = await bench.devices(HISTORY_DEVICES);
    const loadDevices = others.slice(0, o.devices);
    const { knex } = bench.platform.db;
    // Whole days up to today's start: the oldest partition is a full day, and every frame ingested is newer.
    const end = Math.floor(Date.now() / DAY_MS) * DAY_MS;
    const start = new Date(end - DAYS * DAY_MS);
    await generateMessages(knex, { devices: [target.id], messages: TARGET_MESSAGES, days: DAYS, start });
    await vacuumMessages(knex); // as the preload is, so that both measurements read vacuumed pages
    const empty = await measure(bench, o, target, loadDevices);
    const perDevice = Math.floor((total - TARGET_MESSAGES) / others.length);
    const preloaded = await preload(knex, others, perDevice, start);
    const loaded = await measure(bench, o, target, loadDevices);
    const loadOptions = { url: bench.mqttUrl, devices: loadDevices, durationMs: o.durationS * 1000, warmupMs: o.warmupS * 1000, window: o.window, rate: o.rate ?? 0 };
    const dropDay = await dropOldestDayUnderLoad(knex, loadOptions);
    return {
      scenario: 'history',
      database: bench.database,
      versions: await bench.versions(),
      history: {
        messages: TARGET_MESSAGES + preloaded.messages, devices: HISTORY_DEVICES, days: DAYS,
        targetDeviceMessages: TARGET_MESSAGES, otherDevicesMessagesEach: perDevice, preloadSeconds: preloaded.seconds,
      },
      load: { devices: loadDevices.length, window: o.window, ratePerDevice: o.rate || 'unbounded', measuredSeconds: o.durationS },
      api: { connections: 10, requestsPerSecondOffered: o.apiRate || null, measuredSeconds: o.durationS },
      empty,
      loaded,
      ratios: {
        ingestFramesPerSecond: ratio(loaded.ingest.framesStoredPerSecond, empty.ingest.framesStoredPerSecond),
        ingestPublishToCommitP99: ratio(loaded.ingest.publishToCommitMs.p99, empty.ingest.publishToCommitMs.p99),
        messagesPageP99: ratio(loaded.api.messages.latencyMs.p99, empty.api.messages.latencyMs.p99),
        tripsPageP99: ratio(loaded.api.trips.latencyMs.p99, empty.api.trips.latencyMs.p99),
        bytesPerMessage: ratio(loaded.storage.bytesPerMessage, empty.storage.bytesPerMessage),
      },
      goals: HISTORY_GOALS,
      dropDay,
      machine: machine(),
    };
  } finally {
    await bench.close();
  }
}

type HistoryResult = Awaited<ReturnType<typeof run>>;

export const historyScenario = benchScenario({
  name: 'history',
  description: 'ingest, API pages and bytes per message on an empty database, then after preloading --messages of history; a day dropped under load',
  run,
  problems: (r: HistoryResult) => [
    ...(['empty', 'loaded'] as const).flatMap((phase) => {
      const { ingest: i, api: a } = r[phase];
      return [
        ...(i.framesStored !== i.framesAcknowledged ? [`history (${phase}): ${i.framesAcknowledged} frames acknowledged but ${i.framesStored} stored`] : []),
        ...(i.publishErrors ? [`history (${phase}): ${i.publishErrors} publish errors`] : []),
        ...[a.messages, a.trips].flatMap((h) => (h.non2xx || h.errors ? [`history (${phase}): ${h.non2xx} non-2xx answers, ${h.errors} errors`] : [])),
      ];
    }),
    ...('publishErrors' in r.dropDay && r.dropDay.publishErrors ? [`history (drop): ${r.dropDay.publishErrors} publish errors`] : []),
  ],
});
