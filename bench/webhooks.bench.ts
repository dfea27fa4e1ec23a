// Webhooks scenario: delivery alone. N devices with M rules each (the rules scenario's rules and
// subscriptions) publish paced frames for the scenario's seconds with no notification worker running, so their
// rule events queue up as notifications; then a worker starts in the bench process and delivers the whole queue
// to a receiver in a process of its own (webhook-receiver.child.js). Reports webhooks per second, the worker
// process's and PostgreSQL's CPU per webhook, and that every notification arrived exactly once; against a bare
// client — the worker's own HTTP client (undici, keep-alive), the same number of calls in flight, nothing else — posting
// the same bodies to the same receiver in the same run.
import { performance } from 'node:perf_hooks';
import { silentLogger } from '../lib/logger.js';
import { NOTIFICATION_ID_HEADER } from '../lib/webhook-signature.js';
import { startNotificationWorker } from '../workers/notifications/index.js';
import { webhookClient } from '../workers/notifications/deliver.js';
import { round, runLoad, startBenchPlatform, machine } from './harness.js';
import { startChild, within } from './child.js';
import { provisionRules } from './rules.bench.js';
import { benchScenario, type BenchOptions } from './types.js';

interface Reached { posts: number; ids: number; cpu: { user: number; system: number } }

/** How long the queue may take to drain before the run fails (its figures would be meaningless). */
const DRAIN_BOUND_MS = 300_000;

/**
 * Posts every body to `url` with `concurrency` calls in flight on the worker's HTTP client (undici's dispatcher, keep-alive,
 * no signature, no record, no timer); ms it took and this process's CPU.
 */
async function bareClient(url: string, bodies: string[], concurrency: number) {
  const client = webhookClient({ timeoutMs: 60_000, allowPrivate: true });
  const target = new URL(url);
  const path = target.pathname + target.search;
  let next = 0;
  let failed = 0;
  const post = (body: string) => new Promise<void>((resolve) => {
    client.dispatcher.dispatch({ origin: target.origin, path, method: 'POST', headers: { 'content-type': 'application/json' }, body: Buffer.from(body, 'utf8') }, {
      onConnect: () => {},
      onHeaders: (status) => { if (status >= 300) failed++; return true; },
      onData: () => true,
      onComplete: () => resolve(),
      onError: () => { failed++; resolve(); },
    });
  });
  const lane = async () => { while (next < bodies.length) await post(bodies[next++]); };
  const cpu = process.cpuUsage();
  const started = performance.now();
  await Promise.all(Array.from({ length: Math.min(concurrency, bodies.length) }, lane));
  const ms = performance.now() - started;
  const used = process.cpuUsage(cpu);
  await client.close();
  return { ms, cpuSeconds: (used.user + used.system) / 1e6, failed };
}

const perWebhookUs = (seconds: number | null, n: number) => (seconds === null || !n ? null : round((seconds * 1e6) / n, 0));

async function run(o: BenchOptions) {
  const receiver = await startChild('./webhook-receiver.child.js', [], [NOTIFICATION_ID_HEADER]);
  const url = String(receiver.ready.url);
  // No worker part: the rule events' notifications stay queued until this scenario starts one.
  const bench = await startBenchPlatform({ databaseUrl: o.databaseUrl, batchSize: o.batchSize, batchMs: o.batchMs,
    flags: { allowPrivateWebhooks: true, only: 'api,gateway' } });
  let worker: Awaited<ReturnType<typeof startNotificationWorker>> | null = null;
  try {
    const { platform } = bench;
    const devices = await bench.devices(o.devices);
    await provisionRules(bench, devices, o.rules, url);
    const rate = o.rate ?? 50; // crossings every few frames: a queue of ~1 rule event per 3 frames
    const load = await runLoad({ url: bench.mqttUrl, devices, durationMs: o.durationS * 1000, warmupMs: o.warmupS * 1000, window: o.window, rate });
    const { knex } = platform.db;
    // this run's notifications only: `bench --smoke` runs the scenarios one after the other on one database, and the
    // rules scenario's notifications (delivered to its own receiver) are in the table too
    const count = async (where: string) =>
      Number((await knex.raw(`SELECT count(*)::int AS n FROM notifications WHERE url = ? AND ${where}`, [url])).rows[0].n);
    const queued = await count('true');

    // Delivery: the worker drains the queue.
    const reached = receiver.ask<Reached>({ type: 'expect', n: queued }, 'reached');
    const from = await bench.monitor.mark();
    const started = performance.now();
    // The one receiver stands for every application's server: it gets all the slots, as many receivers would, rather
    // than one endpoint's share (config webhookEndpointConcurrency), so the figures stay those of the worker's slots.
    const config = { ...platform.config, webhookEndpointConcurrency: platform.config.webhookConcurrency };
    worker = await startNotificationWorker({ config, db: platform.db, repos: platform.repos, log: silentLogger, bus: platform.bus });
    const drained = await within(reached, DRAIN_BOUND_MS);
    const ms = performance.now() - started;
    const to = await bench.monitor.mark();
    await worker.close();
    worker = null;
    const processes = bench.monitor.figures(from, to, null);
    const complete = await count(`state = 'complete'`);
    const webhooks = drained?.posts ?? 0;
    const pg = processes.postgres.cpuUserSeconds === null ? null : processes.postgres.cpuUserSeconds + (processes.postgres.cpuSystemSeconds ?? 0);
    const webhooksPerSecond = round(webhooks / (ms / 1000), 0);

    // The bare client: the same bodies (stored with their first attempt), the same receiver, the same calls in flight.
    let baseline: Record<string, unknown> | null = null;
    if (o.baselines !== false) {
      const bodies = (await knex.raw('SELECT payload FROM notifications WHERE url = ? AND payload IS NOT NULL', [url])).rows.map((r: { payload: string }) => r.payload);
      await receiver.ask({ type: 'reset' });
      const bareReached = receiver.ask<Reached>({ type: 'expect', n: bodies.length }, 'reached');
      const bare = await bareClient(url, bodies, platform.config.webhookConcurrency);
      await bareReached;
      const barePerSecond = round(bodies.length / (bare.ms / 1000), 0);
      baseline = {
        bareHttpClient: { webhooks: bodies.length, failed: bare.failed, seconds: round(bare.ms / 1000, 2), webhooksPerSecond: barePerSecond, cpuUsPerWebhook: perWebhookUs(bare.cpuSeconds, bodies.length) },
        ratioToBareHttpClient: round(webhooksPerSecond / barePerSecond, 2),
      };
    }
    return {
      scenario: 'webhooks',
      database: bench.database,
      versions: await bench.versions(),
      devices: o.devices,
      rulesPerDevice: o.rules,
      ratePerDevice: rate,
      framesAcknowledged: load.ackedTotal,
      queued,
      webhooksDelivered: webhooks,
      distinctNotifications: drained?.ids ?? 0,
      complete,
      concurrency: platform.config.webhookConcurrency,
      seconds: round(ms / 1000, 2),
      webhooksPerSecond,
      // The bench process (the worker; the idle gateway and API) and the database's backends, per webhook.
      cpuUsPerWebhook: {
        worker: perWebhookUs(processes.platform.cpuUserSeconds + processes.platform.cpuSystemSeconds, webhooks),
        postgres: perWebhookUs(pg, webhooks),
      },
      processes,
      baselines: baseline,
      machine: machine(),
    };
  } finally {
    await worker?.close();
    await bench.close();
    await receiver.close();
  }
}

export const webhooksScenario = benchScenario({
  name: 'webhooks',
  description: 'delivery alone: a queue of rule events\' webhooks drained by one worker; webhooks/s and CPU per webhook; ratio to a bare http client',
  run,
  problems: (r) => [
    ...(r.queued === 0 ? ['webhooks: no notification was queued'] : []),
    ...(r.webhooksDelivered !== r.queued ? [`webhooks: ${r.queued} queued but ${r.webhooksDelivered} delivered`] : []),
    ...(r.distinctNotifications !== r.webhooksDelivered ? [`webhooks: ${r.webhooksDelivered} deliveries of ${r.distinctNotifications} notifications (duplicates)`] : []),
    ...(r.complete !== r.queued ? [`webhooks: ${r.complete} of ${r.queued} notifications complete`] : []),
  ],
});
