// Noisy neighbour scenario: a hanging receiver. Tenant Y (the bench application) has the rules scenario's devices, rules
// and `rule-*` subscriptions, posting to a receiver that answers at once (webhook-receiver.child.js, `timing`): the
// webhooks' publish → arrival latency is Y's. The baseline phase runs that load alone. Then tenant X, an application of
// its own, is authorized for one more device with a speed rule and 150 `rule-*` subscriptions to a receiver that never
// answers (the same child, `hang`), and the same load runs again, on as many other devices of Y's and X's device: every crossing of X's rule is 150
// webhooks that hold their calls until the delivery timeout. Y's webhook p99 is printed for both phases, on one
// platform in one run (the worker in the platform's process, with the configuration's slots and per-endpoint limit).
import { NOTIFICATION_ID_HEADER } from '../lib/webhook-signature.js';
import { machine, round, runLoad, spread, startBenchPlatform, type BenchPlatform } from './harness.js';
import { startChild, within } from './child.js';
import { provisionRules } from './rules.bench.js';
import { benchScenario, type BenchOptions } from './types.js';

interface Collected { posts: number; ids: number; latencies: number[]; eventTimes: number[] }

/** Tenant X's subscriptions to the hanging receiver, as in the report this scenario reproduces. */
const NOISY_SUBSCRIPTIONS = 150;
/** Y's p99 this scenario is held to (never a problem of the run: timings are read, not failed). */
const TARGET_P99_MS = 1000;

/** Tenant X: an application of its own, the device, a speed rule on it crossed every few frames, its subscriptions. */
async function noisyTenant(bench: BenchPlatform, deviceId: string, url: string): Promise<void> {
  const { platform } = bench;
  const x = await platform.repos.applications.create({ name: `noisy neighbour ${new Date().toISOString()}`, kind: 'enterprise' });
  await platform.db.knex.transaction(async (trx) => {
    await platform.repos.devices.authorize(deviceId, x.id, trx);
    await platform.repos.devices.register(x.id, deviceId, trx);
  });
  const auth = `Basic ${Buffer.from(`${x.id}:${x.secret}`).toString('base64')}`;
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${platform.apiUrl}${path}`, { method: 'POST', headers: { authorization: auth, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    if (res.status !== 201) throw new Error(`POST ${path}: ${res.status} ${await res.text()}`);
    return res.json();
  };
  // the load's speeds step 0, 7, 14, … 119 km/h: over 20 from a device's fourth frame on (within a smoke run's seconds)
  const { rule } = await post(`/api/v1/devices/${deviceId}/rules`, { rule: {
    name: 'noisy speed over 20', boundaries: [{ type: 'parametric', parameter: 'vehicleSpeed', min: 20, max: null }],
  } });
  for (let i = 0; i < NOISY_SUBSCRIPTIONS; i++) {
    await post(`/api/v1/devices/${deviceId}/subscriptions`, { subscription: { eventType: 'rule-*', url, object: { type: 'rule', id: rule.id } } });
  }
}

async function run(o: BenchOptions) {
  const receiver = await startChild('./webhook-receiver.child.js', [], [NOTIFICATION_ID_HEADER, 'timing']);
  const hanging = await startChild('./webhook-receiver.child.js', [], [NOTIFICATION_ID_HEADER, 'hang']);
  const bench = await startBenchPlatform({ databaseUrl: o.databaseUrl, batchSize: o.batchSize, batchMs: o.batchMs,
    flags: { allowPrivateWebhooks: true } });
  try {
    const { platform } = bench;
    // Each phase has devices of its own: a device's frames are numbered from its first (load.worker.js), so the same
    // devices loaded again would send frames already stored, and their rules would not fire.
    const all = await bench.devices(2 * o.devices + 1);
    const [first, second, noisyDevice] = [all.slice(0, o.devices), all.slice(o.devices, 2 * o.devices), all[2 * o.devices]];
    // each set's rules as the load indexes its devices (the geofence on each device's lane)
    for (const set of [first, second]) await provisionRules(bench, set, o.rules, String(receiver.ready.url));
    const rate = o.rate ?? 2;
    const { knex } = platform.db;
    const drainMs = o.smoke ? 20_000 : 60_000;

    /** One phase: the load over `loaded` devices; Y's rule events of the phase and the webhooks of its measured window. */
    const phase = async (loaded: { id: string; secret: string }[]) => {
      await receiver.ask({ type: 'reset' });
      const started = new Date();
      const load = await runLoad({ url: bench.mqttUrl, devices: loaded, durationMs: o.durationS * 1000, warmupMs: o.warmupS * 1000, window: o.window, rate });
      const events = Number((await knex('events').where('event_type', 'like', 'rule-%').where('application_id', bench.app.id)
        .where('stored', '>=', started).count({ n: '*' }))[0].n);
      await within(receiver.ask({ type: 'expect', n: events }, 'reached'), drainMs);
      const got = await receiver.ask<Collected>({ type: 'collect' }, 'collected');
      const { from, to } = load.windowEpochMs;
      const inWindow = Float64Array.from(got.latencies.filter((_, i) => got.eventTimes[i] >= from && got.eventTimes[i] <= to));
      return {
        framesAcknowledged: load.ackedTotal, publishErrors: load.errors, ruleEvents: events, webhooksDelivered: got.posts,
        webhooksDistinct: got.ids, publishToWebhookMs: { ...spread(inWindow), webhooks: inWindow.length },
        publishToWebhookMsAll: spread(Float64Array.from(got.latencies)),
      };
    };

    const baseline = await phase(first);
    await noisyTenant(bench, noisyDevice.id, String(hanging.ready.url));
    const noisy = await phase([...second, noisyDevice]);
    const noisyEvents = Number((await knex('events').where('event_type', 'like', 'rule-%').whereNot('application_id', bench.app.id).count({ n: '*' }))[0].n);
    const hangingPosts = (await hanging.ask<{ posts: number }>({ type: 'collect' }, 'collected')).posts;
    return {
      scenario: 'neighbours',
      database: bench.database,
      versions: await bench.versions(),
      devices: o.devices,
      rulesPerDevice: o.rules,
      ratePerDevice: rate || 'unbounded',
      seconds: o.durationS + o.warmupS,
      concurrency: platform.config.webhookConcurrency,
      endpointConcurrency: platform.config.webhookEndpointConcurrency,
      webhookTimeoutMs: platform.config.webhookTimeoutMs,
      noisyNeighbour: {
        subscriptions: NOISY_SUBSCRIPTIONS, ruleEvents: noisyEvents, webhooksOwed: noisyEvents * NOISY_SUBSCRIPTIONS,
        // calls the hanging receiver took (each held until the delivery timeout)
        callsReceived: hangingPosts,
      },
      baseline,
      withNoisyNeighbour: noisy,
      tenantYWebhookP99Ms: { baseline: baseline.publishToWebhookMs.p99, withNoisyNeighbour: noisy.publishToWebhookMs.p99, target: TARGET_P99_MS },
      ratioToBaseline: baseline.publishToWebhookMs.p99 > 0 ? round(noisy.publishToWebhookMs.p99 / baseline.publishToWebhookMs.p99, 2) : null,
      machine: machine(),
    };
  } finally {
    await bench.close();
    await receiver.close();
    await hanging.close();
  }
}

/** The counts of a phase that must agree. */
interface PhaseCounts { ruleEvents: number; webhooksDelivered: number; webhooksDistinct: number; publishErrors: number }

const phaseProblems = (name: string, p: PhaseCounts | undefined) => !p ? [] : [
  ...(p.webhooksDelivered !== p.ruleEvents ? [`neighbours (${name}): ${p.ruleEvents} rule events of tenant Y but ${p.webhooksDelivered} webhooks delivered`] : []),
  ...(p.webhooksDistinct !== p.webhooksDelivered ? [`neighbours (${name}): ${p.webhooksDelivered} webhooks delivered for ${p.webhooksDistinct} notifications`] : []),
  ...(p.publishErrors ? [`neighbours (${name}): ${p.publishErrors} publish errors`] : []),
];

export const neighboursScenario = benchScenario({
  name: 'neighbours',
  description: 'noisy neighbour, hanging receiver: tenant Y\'s publish→webhook p99 with tenant X\'s 150 subscriptions to a receiver that never answers, beside a baseline without them',
  run,
  problems: (r) => [
    ...phaseProblems('baseline', r.baseline),
    ...phaseProblems('with the noisy neighbour', r.withNoisyNeighbour),
    ...(r.noisyNeighbour && r.noisyNeighbour.ruleEvents === 0 ? ['neighbours: tenant X\'s rule never fired (no hanging webhooks)'] : []),
  ],
});
