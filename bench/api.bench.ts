// API scenario: autocannon on `GET /devices/{id}/messages` of a device with a long history,
// idle or while devices publish at a given total rate, and the same load on a bare Fastify route running
// the same statement (the page with what its remaining count needs) straight through the database
// client — measured in the same run, so the figure is a ratio to what the machine can do with nothing of ours.
import Fastify from 'fastify';
import pg from 'pg';
import autocannon from 'autocannon';
import { startApiProcess } from './child.js';
import { quantile, round, runLoad, startBenchPlatform, type LoadResult, machine } from './harness.js';
import type { Knex } from 'knex';
import { benchScenario, type BenchOptions } from './types.js';
import { MESSAGE_TOTALS, messageTotalsBindings, remainingFromTotals } from '../db/repositories/telemetry.repository.js';
import { createPartitions } from '../db/partitions.js';
import { MESSAGE_PARTITIONS } from '../db/retention/time-tables.js';

const HISTORY = 50_000;
const LIMIT = 20;
const CONNECTIONS = 10;
/** The platform's statement for a page of a device's messages without `since` (telemetry.repository.ts), pg's $n. */
const PAGE_WITH_TOTALS = `SELECT m.id, m.device_id, m.ts, m.data, ${MESSAGE_TOTALS}
  FROM messages m WHERE m.device_id = ? AND m.ts <= ? ORDER BY m.ts DESC, m.id DESC LIMIT ?`
  .split('?').map((part, i) => (i ? `$${i}${part}` : part)).join('');

/** A device history of HISTORY messages, one a second, written in one statement. */
async function seedHistory(knex: Knex, deviceId: string): Promise<void> {
  await createPartitions(knex, MESSAGE_PARTITIONS, new Date(Date.now() - (HISTORY + 1) * 1000), new Date());
  await knex.raw(`
    INSERT INTO messages (id, device_id, ts, num, received_at)
    SELECT message_uuid(x.ts), ?, x.ts, message_num(jsonb_build_object('rpm', 800 + x.g % 4000, 'vehicleSpeed', x.g % 120), NULL), now()
      FROM (SELECT g, date_trunc('milliseconds', now()) - g * interval '1 second' AS ts FROM generate_series(1, ?) g) x`, [deviceId, HISTORY]);
}

export interface HttpFigures { requestsPerSecond: number; latencyMs: { p50: number; p99: number; max: number }; non2xx: number; errors: number }

/** `rate`: requests a second in all (autocannon's overallRate), for a latency at a given load; 0: as fast as answered. */
export async function hammer(url: string, headers: Record<string, string>, durationS: number, rate = 0): Promise<HttpFigures> {
  const r = await autocannon({ url, headers, connections: CONNECTIONS, duration: durationS, workers: 1, ...(rate ? { overallRate: rate } : {}) });
  return {
    requestsPerSecond: round(r.requests.average, 0),
    latencyMs: { p50: r.latency.p50, p99: r.latency.p99, max: r.latency.max },
    non2xx: r.non2xx, errors: r.errors + r.timeouts,
  };
}

type Query = (sql: string, params: unknown[]) => Promise<Record<string, unknown>[]>;

/**
 * The bare baseline: one Fastify route, the same page query and remaining query as the platform's, through a
 * plain pg pool (PostgreSQL) or the embedded database's only connection (PGlite).
 */
async function bareFastify(databaseUrl: string | null, knex: Knex): Promise<{ url: string; close(): Promise<void> }> {
  const pool = databaseUrl ? new pg.Pool({ connectionString: databaseUrl, max: 10 }) : null;
  const query: Query = pool
    ? async (sql, params) => (await pool.query(sql, params)).rows
    : async (sql, params) => (await knex.raw(sql.replace(/\$\d+/g, '?'), params as never[])).rows;
  const app = Fastify();
  app.get<{ Params: { id: string } }>('/messages/:id', async (request) => {
    // the platform's one statement: the page with the device's stored total and its messages newer than `until`
    const until = new Date();
    const rows = await query(PAGE_WITH_TOTALS, [...messageTotalsBindings(request.params.id, until), request.params.id, until, LIMIT + 1]);
    const page = rows.slice(0, LIMIT);
    return { messages: page.map(({ dw_total: _t, dw_newer: _n, ...m }) => m), remaining: remainingFromTotals(rows[0], page.length) };
  });
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  return { url: address, close: async () => { await app.close(); await pool?.end(); } };
}

async function run(o: BenchOptions) {
  if (o.apiProcess && !o.databaseUrl) throw new Error('--api-process needs --database-url: the embedded database belongs to one process');
  const bench = await startBenchPlatform({ databaseUrl: o.databaseUrl });
  const separate = o.apiProcess && o.databaseUrl ? await startApiProcess(o.databaseUrl).catch(async (err) => { await bench.close(); throw err; }) : null;
  try {
    const [target, ...publishers] = await bench.devices(1 + (o.ingestRate ? o.devices : 0));
    const { knex } = bench.platform.db;
    await seedHistory(knex, target.id);
    const apiUrl = separate?.url ?? bench.platform.apiUrl;
    const { app } = bench;
    const auth = { authorization: `Basic ${Buffer.from(`${app.id}:${app.secret}`).toString('base64')}` };
    // Background ingest for both measurements (platform, then bare), when asked for.
    const perDevice = o.ingestRate ? o.ingestRate / publishers.length : 0;
    const ingest: Promise<LoadResult> | null = o.ingestRate ? runLoad({
      url: bench.mqttUrl, devices: publishers, durationMs: (2 * o.durationS + 2 * o.warmupS) * 1000, warmupMs: 0, window: o.window, rate: perDevice,
    }) : null;
    if (ingest) await new Promise((r) => setTimeout(r, o.warmupS * 1000));
    const path = `/api/v1/devices/${target.id}/messages?limit=${LIMIT}`;
    await hammer(`${apiUrl}${path}`, auth, 1); // warm caches and JIT
    const from = await bench.monitor.mark();
    const apiCpuFrom = separate?.cpu() ?? null;
    const platform = await hammer(`${apiUrl}${path}`, auth, o.durationS, o.apiRate);
    const apiCpuTo = separate?.cpu() ?? null;
    // autocannon's worker thread is not ours to instrument: its CPU is in the bench process's.
    const processes = bench.monitor.figures(from, await bench.monitor.mark(), {
      where: ingest ? 'autocannon and ingest load worker threads' : 'autocannon worker thread', cpuUserSeconds: null, cpuSystemSeconds: null,
      reason: 'autocannon runs in a worker thread of the bench process that it does not instrument: its CPU is in the platform\'s',
    });
    const bare = o.baselines === false ? null : await bareFastify(o.databaseUrl, knex);
    const baseline = bare ? await hammer(`${bare.url}/messages/${target.id}`, {}, o.durationS, o.apiRate) : null;
    await bare?.close();
    const load = ingest ? await ingest : null;
    return {
      scenario: 'api',
      database: bench.database,
      versions: await bench.versions(),
      request: `GET /api/v1/devices/{id}/messages?limit=${LIMIT} over ${HISTORY} stored messages, ${CONNECTIONS} connections`,
      requestsPerSecondOffered: o.apiRate || null,
      layout: separate ? 'API in its own process (serve --only api); gateway and workers in the bench process' : 'one process (API, gateway, workers)',
      apiProcessCpuSeconds: apiCpuFrom !== null && apiCpuTo !== null ? round(apiCpuTo - apiCpuFrom, 3) : null,
      ingestDuringMeasurement: load && {
        framesPerSecondOffered: o.ingestRate,
        framesPerSecondStored: round(load.acked / (load.measuredMs / 1000), 0),
        publishToCommitMs: { p50: round(quantile(load.latencies, 0.5)), p99: round(quantile(load.latencies, 0.99)) },
        // the bench process's main thread while the ingest ran (both measurements): what a request in it waits behind
        eventLoopDelayMs: load.eventLoopDelayMs,
      },
      platform,
      processes,
      baselines: baseline && {
        bareFastifyPg: baseline,
        ratioToBareFastify: round(platform.requestsPerSecond / baseline.requestsPerSecond, 2),
      },
      machine: machine(),
    };
  } finally {
    await separate?.close();
    await bench.close();
  }
}

export const apiScenario = benchScenario({
  name: 'api',
  description: 'GET …/messages under autocannon, idle or during ingest (--ingest-rate), as fast as answered or at --api-rate; ratio to a bare Fastify + pg route',
  run,
  problems: (r) => (r.platform.non2xx || r.platform.errors ? [`api: ${r.platform.non2xx} non-2xx answers, ${r.platform.errors} errors`] : []),
});
