// Commands scenario: N devices connected over real MQTT answer every command at once (reply ok, QoS 1); then
// one ping each is POSTed through the platform's API over real HTTP, at most POSTS_IN_FLIGHT at once, from a bench
// client in a process of its own (commands.child.js, which holds the devices too). Per command: POST start → the
// command's PUBLISH arriving at the device, POST start → succeeded (the command's respondedAt, read from the database
// at the end: PostgreSQL's clock is this host's), and POST start → the PUBACK of the device's reply (the gateway
// acknowledges a reply once it is stored: succeeded as the device sees it). Where the time goes comes from the
// command's own timestamps (created, sent, delivered, responded) between those. Baseline, same run: the same devices'
// code on a bare Aedes, a publisher publishing one QoS 1 command message per device (the same number in flight) and
// taking each reply: publish → reply received.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { startBareAedes } from './baselines.js';
import { startApiProcess, startChild } from './child.js';
import { machine, round, spread, startBenchPlatform } from './harness.js';
import type { LoadGeneratorFigures } from './processes.js';
import { benchScenario, type BenchOptions } from './types.js';

/** POSTs (and, for the baseline, publishes waiting for their PUBACK) in flight at once. */
export const POSTS_IN_FLIGHT = 64;
/** CONNECTs in flight at once while the devices connect. */
const CONNECT_PARALLEL = 100;
/** The issue's target: p99 POST → succeeded under 1 s (for 1,000 devices). */
const TARGET_P99_MS = 1000;
/** The client stops waiting for what is missing once nothing moved for this long (the gateway looks again every second). */
const IDLE_MS = 10_000;

interface Connected { connected: number; failed: number; firstError: string | null; ms: number }
interface AtDevice { arrivedAt?: number; replyAckedAt?: number | null; replyError?: string | null }
type Cpu = { user: number; system: number };
interface Posted {
  statuses: Record<string, number>; firstError: string | null; postedAt: number; cpu: Cpu; maxRssBytes: number;
  commands: ({ deviceId: string; commandId: string | null; startedAt: number; answeredAt: number } & AtDevice)[];
}
interface Published {
  errors: number; cpu: Cpu;
  commands: ({ commandId: string; startedAt: number; ackedAt: number | null; repliedAt: number | null } & AtDevice)[];
}

/** Epoch ms (fractional) of a command's timestamps, as the database holds them (µs). */
interface Stamps { id: string; state: string; created: number; sent: number | null; delivered: number | null; responded: number | null }

const ms = (values: number[]) => spread(Float64Array.from(values));
/** b − a for each pair where both are known. */
const between = <T>(rows: T[], a: (r: T) => number | null | undefined, b: (r: T) => number | null | undefined) =>
  ms(rows.flatMap((r) => { const x = a(r), y = b(r); return x == null || y == null ? [] : [y - x]; }));
/** Distinct values of a timestamp: the statements (claims, PUBACK updates) or transactions (replies) that set it. */
const distinct = (values: (number | null)[]) => new Set(values.filter((v) => v !== null)).size;

interface TarnPool { max: number; numUsed(): number; numPendingAcquires(): number }

/**
 * The bench process's database pool (knex's tarn pool: the gateway's, and the API's too unless --api-process), sampled
 * every 20 ms: how often all its connections were in use and how many acquisitions waited. The gateway's claims, PUBACK
 * updates and reply transactions queue there behind the API's requests.
 */
function samplePool(knex: unknown) {
  const pool = (knex as { client?: { pool?: TarnPool } }).client?.pool;
  let samples = 0, full = 0, pendingSum = 0, pendingMax = 0;
  const timer = pool && setInterval(() => {
    samples++;
    const pending = pool.numPendingAcquires();
    if (pool.numUsed() >= pool.max) full++;
    pendingSum += pending;
    pendingMax = Math.max(pendingMax, pending);
  }, 20);
  return () => {
    if (timer) clearInterval(timer);
    return pool && samples ? { size: pool.max, samples, fullShare: round(full / samples, 2), meanPendingAcquires: round(pendingSum / samples), maxPendingAcquires: pendingMax } : null;
  };
}

async function run(o: BenchOptions) {
  if (o.apiProcess && !o.databaseUrl) throw new Error('--api-process needs --database-url: the embedded database belongs to one process');
  const bench = await startBenchPlatform({ databaseUrl: o.databaseUrl });
  const separate = o.apiProcess && o.databaseUrl ? await startApiProcess(o.databaseUrl).catch(async (err) => { await bench.close(); throw err; }) : null;
  const client = await startChild('./commands.child.js');
  try {
    const devices = await bench.devices(o.devices);
    const { app, platform } = bench;
    const c = await client.ask<Connected>({ type: 'connect', url: bench.mqttUrl, devices, parallel: CONNECT_PARALLEL }, 'connected');
    if (c.failed) throw new Error(`commands: ${c.failed} of ${devices.length} devices could not connect: ${c.firstError}`);
    // what their connecting set going (presence) settles before the commands
    await new Promise((r) => setTimeout(r, o.warmupS * 1000));

    const delay = monitorEventLoopDelay({ resolution: 10 });
    delay.enable();
    const from = await bench.monitor.mark();
    const apiCpuFrom = separate?.cpu() ?? null;
    const pool = samplePool(platform.db.knex);
    const posted = await client.ask<Posted>({
      type: 'post', apiUrl: new URL(separate?.url ?? platform.apiUrl).origin, deviceIds: devices.map((d) => d.id), inflight: POSTS_IN_FLIGHT, idleMs: IDLE_MS,
      authorization: `Basic ${Buffer.from(`${app.id}:${app.secret}`).toString('base64')}`,
    }, 'posted');
    const to = await bench.monitor.mark();
    const apiCpuTo = separate?.cpu() ?? null;
    const poolFigures = pool();
    delay.disable();
    const loadGenerator: LoadGeneratorFigures = {
      where: 'child process', cpuUserSeconds: round(posted.cpu.user, 3), cpuSystemSeconds: round(posted.cpu.system, 3), peakRssBytes: posted.maxRssBytes,
    };

    const ids = posted.commands.flatMap((p) => (p.commandId ? [p.commandId] : []));
    const { knex } = platform.db;
    const epoch = (column: string) => `(extract(epoch from ${column}) * 1000)::float8 AS ${column.replace(/_at$/, '')}`;
    const rows = ids.length ? (await knex.raw(
      `SELECT id, state, ${['created_at', 'sent_at', 'delivered_at', 'responded_at'].map(epoch).join(', ')}
         FROM commands WHERE id IN (SELECT value::uuid FROM json_array_elements_text(?::json))`, [JSON.stringify(ids)])).rows as Stamps[] : [];
    const byId = new Map(rows.map((r) => [r.id, r]));
    const joined = posted.commands.map((p) => ({ ...p, db: p.commandId ? byId.get(p.commandId) : undefined }));
    const states: Record<string, number> = {};
    for (const r of rows) states[r.state] = (states[r.state] ?? 0) + 1;
    const succeeded = states.succeeded ?? 0;
    const first = Math.min(...joined.map((p) => p.startedAt));
    const lastResponded = Math.max(...rows.flatMap((r) => (r.responded === null ? [] : [r.responded])));
    const postToSucceededMs = between(joined, (p) => p.startedAt, (p) => p.db?.responded);

    let baselines: Record<string, unknown> | null = null;
    if (o.baselines !== false) {
      await client.ask({ type: 'disconnect' }, 'disconnected');
      const bare = await startBareAedes();
      try {
        const b = await client.ask<Connected>({ type: 'connect', url: bare.url, devices, parallel: CONNECT_PARALLEL }, 'connected');
        if (b.failed) throw new Error(`commands: ${b.failed} of ${devices.length} devices could not connect to bare Aedes: ${b.firstError}`);
        const pub = await client.ask<Published>({ type: 'publish', url: bare.url, deviceIds: devices.map((d) => d.id), inflight: POSTS_IN_FLIGHT, idleMs: IDLE_MS }, 'published');
        const replies = pub.commands.filter((s) => s.repliedAt !== null);
        const publishToReplyMs = between(pub.commands, (s) => s.startedAt, (s) => s.repliedAt);
        const bareFirst = Math.min(...pub.commands.map((s) => s.startedAt));
        const bareLast = Math.max(...replies.map((s) => s.repliedAt!));
        baselines = {
          bareAedes: {
            published: pub.commands.length, publishErrors: pub.errors, replies: replies.length,
            publishToAckMs: between(pub.commands, (s) => s.startedAt, (s) => s.ackedAt),
            publishToDeliveredAtDeviceMs: between(pub.commands, (s) => s.startedAt, (s) => s.arrivedAt),
            publishToReplyMs,
            commandsPerSecond: replies.length ? round(replies.length / ((bareLast - bareFirst) / 1000), 0) : 0,
          },
          ratioP99ToBareAedes: round(postToSucceededMs.p99 / publishToReplyMs.p99, 1),
          ratioP50ToBareAedes: round(postToSucceededMs.p50 / publishToReplyMs.p50, 1),
        };
      } finally {
        await bare.close();
      }
    }

    return {
      scenario: 'commands',
      database: bench.database,
      versions: await bench.versions(),
      devices: o.devices,
      layout: separate ? 'API in its own process (serve --only api); gateway and workers in the bench process' : 'one process (API, gateway, workers)',
      apiProcessCpuSeconds: apiCpuFrom !== null && apiCpuTo !== null ? round(apiCpuTo - apiCpuFrom, 3) : null,
      postsInFlight: POSTS_IN_FLIGHT,
      connectSeconds: round(c.ms / 1000, 2),
      posted: posted.commands.length,
      postStatuses: posted.statuses,
      ...(posted.firstError ? { firstPostError: posted.firstError } : {}),
      states,
      succeeded,
      allSucceeded: succeeded === o.devices,
      repliesAcknowledged: joined.filter((p) => p.replyAckedAt != null && !p.replyError).length,
      postMs: between(joined, (p) => p.startedAt, (p) => p.answeredAt),
      postToDeliveredAtDeviceMs: between(joined, (p) => p.startedAt, (p) => p.arrivedAt),
      postToSucceededMs,
      postToReplyAckedAtDeviceMs: between(joined, (p) => p.startedAt, (p) => p.replyAckedAt),
      commandsPerSecond: succeeded ? round(succeeded / ((lastResponded - first) / 1000), 0) : 0,
      postsPerSecond: round(posted.commands.length / ((posted.postedAt - first) / 1000), 0),
      target: { p99PostToSucceededMs: TARGET_P99_MS, met: succeeded === o.devices && postToSucceededMs.p99 < TARGET_P99_MS },
      // Each step of a command's way, from its own timestamps (the database's now(): a statement's or transaction's start) and the device's clock.
      stagesMs: {
        postStartToCreated: between(joined, (p) => p.startedAt, (p) => p.db?.created),
        createdToSent: between(joined, (p) => p.db?.created, (p) => p.db?.sent),
        sentToArrivedAtDevice: between(joined, (p) => p.db?.sent, (p) => p.arrivedAt),
        arrivedToDeliveredRecorded: between(joined, (p) => p.arrivedAt, (p) => p.db?.delivered),
        arrivedToResponded: between(joined, (p) => p.arrivedAt, (p) => p.db?.responded),
        respondedToReplyAcked: between(joined, (p) => p.db?.responded, (p) => p.replyAckedAt),
      },
      // Statements and transactions that made the commands' states: distinct now() values of each timestamp.
      batches: {
        claims: distinct(rows.map((r) => r.sent)),
        deliveredUpdates: distinct(rows.map((r) => r.delivered)),
        replyTransactions: distinct(rows.map((r) => r.responded)),
      },
      benchProcessPool: poolFigures,
      eventLoopDelayMs: { p50: round(delay.percentile(50) / 1e6), p99: round(delay.percentile(99) / 1e6), max: round(delay.max / 1e6) },
      processes: bench.monitor.figures(from, to, loadGenerator),
      baselines,
      machine: machine(),
    };
  } finally {
    await client.close();
    await separate?.close();
    await bench.close();
  }
}

export const commandsScenario = benchScenario({
  name: 'commands',
  description: 'N devices answering at once, one ping each POSTed through the API (64 in flight); POST → delivered at the device and → succeeded p50/p99, commands/s; ratio to bare Aedes',
  run,
  problems: (r) => [
    ...(r.allSucceeded ? [] : [`commands: ${r.succeeded} of ${r.devices} commands succeeded (${JSON.stringify(r.states)}; POSTs ${JSON.stringify(r.postStatuses)})`]),
    ...(r.repliesAcknowledged !== r.devices ? [`commands: ${r.repliesAcknowledged} of ${r.devices} replies acknowledged by the gateway`] : []),
  ],
});
