// Rules scenario: N devices with M rules each publish paced QoS 1 frames; the rules are
// evaluated at ingest, every transition is a webhook to a local receiver. Reports rule events per
// second and the time from a frame's publish (its `ts`) to the webhook's arrival at the receiver, which runs in a
// process of its own (webhook-receiver.child.js): it stands for the applications' servers, so its CPU is not the
// platform's, and it does not share the platform's event loop.
import { batchFigures, round, runLoad, spread, startBenchPlatform, machine, type BenchPlatform } from './harness.js';
import { bareAedes, storingAedes } from './baselines.js';
import { benchScenario, type BenchOptions } from './types.js';
import { startChild, within } from './child.js';
import { NOTIFICATION_ID_HEADER } from '../lib/webhook-signature.js';

/** What the receiver noted: per webhook, its event's time and ms from it to the arrival (epoch ms). */
interface Collected { ids: number; latencies: number[]; eventTimes: number[]; first: number; last: number }


/**
 * The load generator's frames cycle vehicleSpeed through 0..119 km/h (step 7) and move each device
 * north ~1.1 m per frame, back south every 1,000 frames: M − 1 speed thresholds spread over that range, and one 100 m
 * geofence on the device's lane, give a steady stream of transitions of both kinds. With `options`, the rules use what
 * a fleet switches on against flapping: the speed rules a deadband and a dwell (100 ms, 5 frames at 50 Hz), and the
 * fence is a 100 m corridor across every lane with a dwell of 1 s and crossings between fixes (the jump back south
 * crosses it between two frames).
 */
export function rulesFor(deviceIndex: number, m: number, options = false) {
  const rules: Record<string, unknown>[] = Array.from({ length: m - 1 }, (_, k) => {
    const min = Math.round(10 + (100 * k) / Math.max(1, m - 1));
    return {
      name: `speed over ${min}`,
      boundaries: [{ type: 'parametric', parameter: 'vehicleSpeed', min, max: null, ...(options ? { deadband: 3 } : {}) }],
      ...(options ? { minInsideSeconds: 0.1 } : {}),
    };
  });
  const lat = 32.7767 + 0.005;
  rules.push(options
    ? { name: 'lane corridor', minInsideSeconds: 1, detectCrossings: true,
      boundaries: [{ type: 'corridor', coordinates: [[-96.807, lat], [-96.797 + deviceIndex * 1e-4, lat], [-96.697, lat]], widthMeters: 100 }] }
    : { name: 'lane geofence', boundaries: [{ type: 'radius', lon: -96.797 + deviceIndex * 1e-4, lat, radius: 100 }] });
  return rules;
}

/** Each device's M rules (rulesFor), each with a `rule-*` webhook subscription to `url`, created through the API. */
export async function provisionRules(bench: BenchPlatform, devices: { id: string }[], m: number, url: string, options = false): Promise<void> {
  const { platform, app } = bench;
  const auth = `Basic ${Buffer.from(`${app.id}:${app.secret}`).toString('base64')}`;
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${platform.apiUrl}${path}`, { method: 'POST', headers: { authorization: auth, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    if (res.status !== 201) throw new Error(`POST ${path}: ${res.status} ${await res.text()}`);
    return res.json();
  };
  for (const [i, d] of devices.entries()) {
    for (const rule of rulesFor(i, m, options)) {
      const { rule: created } = await post(`/api/v1/devices/${d.id}/rules`, { rule });
      await post(`/api/v1/devices/${d.id}/subscriptions`, { subscription: { eventType: 'rule-*', url, object: { type: 'rule', id: created.id } } });
    }
  }
}

async function run(o: BenchOptions) {
  const receiver = await startChild('./webhook-receiver.child.js', [], [NOTIFICATION_ID_HEADER, 'timing']);
  const bench = await startBenchPlatform({ databaseUrl: o.databaseUrl, batchSize: o.batchSize, batchMs: o.batchMs,
    flags: { allowPrivateWebhooks: true } });
  try {
    const { platform } = bench;
    const devices = await bench.devices(o.devices);
    await provisionRules(bench, devices, o.rules, String(receiver.ready.url), o.ruleOptions);
    const rate = o.rate ?? 2; // paced by default (rule transitions at a steady pace); --rate 0 = closed loop
    const started = new Date();
    const loadOptions = { devices, durationMs: o.durationS * 1000, warmupMs: o.warmupS * 1000, window: o.window, rate };
    const load = await runLoad({ ...loadOptions, url: bench.mqttUrl }, bench.monitor);
    const { knex } = platform.db;
    const ruleEvents = async () => Number((await knex('events').where('event_type', 'like', 'rule-%').where('stored', '>=', started).count({ n: '*' }))[0].n);
    const events = await ruleEvents();
    // Let the queue drain (bounded), so every delivered webhook is counted.
    await within(receiver.ask({ type: 'expect', n: events }, 'reached'), 60_000);
    const received = await receiver.ask<Collected>({ type: 'collect' }, 'collected');
    const delivered = Float64Array.from(received.latencies);
    // Like the frames' publish → commit: the webhooks of frames published in the measured window (the warm-up's first
    // evaluations and the connections' set-up are not in it); `publishToWebhookMsAll` has every webhook.
    const { from, to } = load.windowEpochMs;
    const inWindow = Float64Array.from(received.latencies.filter((_, i) => received.eventTimes[i] >= from && received.eventTimes[i] <= to));
    // The same load against a bare Aedes, after the drain, on the same machine.
    const bare = o.baselines === false ? null : await bareAedes(loadOptions);
    const storing = bare && await storingAedes(loadOptions, { databaseUrl: o.databaseUrl, knex }, bare, bench.monitor);
    const framesAcknowledgedPerSecond = round(load.acked / (load.measuredMs / 1000), 0);
    const totalS = (o.durationS + o.warmupS);
    return {
      scenario: 'rules',
      database: bench.database,
      versions: await bench.versions(),
      devices: o.devices,
      rulesPerDevice: o.rules,
      ruleOptions: o.ruleOptions ?? false,
      ratePerDevice: rate || 'unbounded',
      seconds: totalS,
      framesAcknowledged: load.ackedTotal,
      framesAcknowledgedPerSecond,
      ruleEvents: events,
      ruleEventsPerSecond: round(events / totalS, 1),
      webhooksDelivered: delivered.length,
      // distinct notification ids among them: fewer than the webhooks delivered is a notification delivered twice
      webhooksDistinct: received.ids,
      // from the first webhook's arrival to the last's, the drain after the load included: what delivery keeps up with
      webhooksPerSecond: delivered.length > 1 ? round(delivered.length / ((received.last - received.first) / 1000), 1) : null,
      publishToWebhookMs: { ...spread(inWindow), webhooks: inWindow.length },
      publishToWebhookMsAll: spread(delivered),
      publishToCommitMs: spread(load.latencies),
      publishErrors: load.errors,
      eventLoopDelayMs: load.eventLoopDelayMs,
      processes: load.processes,
      ...batchFigures(await bench.metrics()),
      baselines: bare && {
        bareAedes: bare, storingAedes: storing,
        ratioToBareAedes: round(framesAcknowledgedPerSecond / bare.framesPerSecond, 2),
        ratioToStoringAedes: storing && round(framesAcknowledgedPerSecond / storing.framesPerSecond, 2),
      },
      machine: machine(),
    };
  } finally {
    await bench.close();
    await receiver.close();
  }
}

export const rulesScenario = benchScenario({
  name: 'rules',
  description: 'N devices with M rules each; rule events/s and publish→webhook latency',
  run,
  problems: (r) => [
    ...(r.webhooksDelivered !== r.ruleEvents ? [`rules: ${r.ruleEvents} rule events but ${r.webhooksDelivered} webhooks delivered`] : []),
    ...(r.webhooksDistinct !== r.webhooksDelivered ? [`rules: ${r.webhooksDelivered} webhooks delivered for ${r.webhooksDistinct} notifications`] : []),
    ...(r.publishErrors ? [`rules: ${r.publishErrors} publish errors`] : []),
  ],
});
