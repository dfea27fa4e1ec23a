// Noisy-neighbour scenario, flood: devices publish paced QoS 1 frames (--rate per device, default 1 frame/s, --window
// in flight) and their publish→PUBACK latency is measured twice on one platform, in the same run: first N devices alone
// (the baseline), then N others while one more device floods QoS 0 arrays of 100 frames as fast as its connection takes
// them (flood.worker.js). The figure is the p99 under the flood beside the baseline's, against a target of 250 ms (on
// PostgreSQL: --database-url); with it, what the flooder sent, what was stored of it and what its rate limit refused.
import { Worker } from 'node:worker_threads';
import { round, runLoad, spread, startBenchPlatform, machine, type LoadResult } from './harness.js';
import { benchScenario, type BenchOptions } from './types.js';

/** The others' publish→PUBACK p99 under the flood should stay under this (ms). */
export const FLOOD_P99_TARGET_MS = 250;
/** Frames in each of the flooder's payloads. */
const ARRAY_FRAMES = 100;
/** Frames per second of each other device when --rate is not given: a dongle's. */
const DEFAULT_RATE = 1;

interface Flooded {
  payloads: number; frames: number; bytes: number; errors: number; disconnects: number; cpu: { user: number; system: number } | null;
  /** How long the flood lasted (from its first payload to its stop). */
  seconds: number;
}

/** The flooding device on its own thread; `stop` ends the flood and resolves with what it sent. */
async function startFlood(url: string, device: { id: string; secret: string }, deviceIndex: number) {
  const worker = new Worker(new URL('./flood.worker.js', import.meta.url), { workerData: { url, device, arrayFrames: ARRAY_FRAMES, deviceIndex } });
  const failed = new Promise<never>((_, reject) => {
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`flood generator exited with code ${code}`)));
  });
  failed.catch(() => undefined);
  const message = <T>(type: string) => Promise.race([failed, new Promise<T>((resolve) => {
    const on = (m: { type: string }) => { if (m.type === type) { worker.off('message', on); resolve(m as T); } };
    worker.on('message', on);
  })]);
  await message('flooding');
  return {
    async stop(): Promise<Flooded> {
      const stopped = message<Flooded & { type: string }>('stopped');
      worker.postMessage({ type: 'stop' });
      const { type, ...figures } = await stopped;
      await worker.terminate();
      return figures;
    },
  };
}

/** One phase's figures for the paced devices. */
const phase = (load: LoadResult) => ({
  publishToAckMs: spread(load.latencies),
  framesAcknowledged: load.ackedTotal,
  publishErrors: load.errors,
  eventLoopDelayMs: load.eventLoopDelayMs,
  processes: load.processes,
});

async function run(o: BenchOptions) {
  const bench = await startBenchPlatform({ databaseUrl: o.databaseUrl, batchSize: o.batchSize, batchMs: o.batchMs });
  try {
    const { config, db } = bench.platform;
    // a set of devices for each phase (the load's frame ids restart with each run: the same devices would send re-sends)
    const all = await bench.devices(2 * o.devices + 1);
    const [alone, beside] = [all.slice(0, o.devices), all.slice(o.devices, 2 * o.devices)];
    const flooder = all[2 * o.devices];
    const rate = o.rate || DEFAULT_RATE;
    const load = (devices: typeof all) => runLoad({
      url: bench.mqttUrl, devices, durationMs: o.durationS * 1000, warmupMs: o.warmupS * 1000, window: o.window, rate,
    }, bench.monitor);
    const stored = async (ids: string[]) => Number((await db.knex('messages').whereIn('device_id', ids).count({ n: '*' }))[0].n);
    const refusedByRate = async () => ({
      rate_frames: await bench.metric('drivewire_gateway_frames_refused_total{reason="rate_frames"}'),
      rate_bytes: await bench.metric('drivewire_gateway_frames_refused_total{reason="rate_bytes"}'),
    });

    const baseline = await load(alone);
    const refusedBefore = await refusedByRate();
    const flood = await startFlood(bench.mqttUrl, flooder, 2 * o.devices);
    const flooded = await load(beside);
    const sent = await flood.stop();
    const refusedAfter = await refusedByRate();
    // what the flooder got in is committed by now or soon: wait for the queue to drain before counting
    for (let until = Date.now() + 30_000; Date.now() < until;) {
      if ((await bench.metric('drivewire_ingest_queue_depth')) === 0) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const flooderStored = await stored([flooder.id]);
    const othersStored = await stored([...alone, ...beside].map((d) => d.id));
    const [base, under] = [phase(baseline), phase(flooded)];
    return {
      scenario: 'flood',
      database: bench.database,
      versions: await bench.versions(),
      devices: o.devices,
      ratePerDevice: rate,
      window: o.window,
      measuredSeconds: o.durationS,
      rateLimit: {
        framesPerSecond: config.deviceFramesPerSecond, framesBurst: config.deviceFramesBurst,
        bytesPerSecond: config.deviceBytesPerSecond, bytesBurst: config.deviceBytesBurst,
      },
      targetP99Ms: FLOOD_P99_TARGET_MS,
      p99UnderTarget: under.publishToAckMs.p99 < FLOOD_P99_TARGET_MS,
      ratioP99FloodToBaseline: round(under.publishToAckMs.p99 / base.publishToAckMs.p99, 2),
      others: { framesStored: othersStored },
      flood: {
        ...under,
        flooder: {
          arrayFrames: ARRAY_FRAMES,
          payloadsSent: sent.payloads,
          framesSent: sent.frames,
          seconds: round(sent.seconds),
          framesSentPerSecond: round(sent.frames / sent.seconds, 0),
          framesStoredPerSecond: round(flooderStored / sent.seconds, 0),
          bytesSent: sent.bytes,
          framesStored: flooderStored,
          payloadsRefused: {
            rate_frames: refusedAfter.rate_frames - refusedBefore.rate_frames,
            rate_bytes: refusedAfter.rate_bytes - refusedBefore.rate_bytes,
          },
          deadLetters: Number((await db.knex('dead_letters').where('device_id', flooder.id).count({ n: '*' }))[0].n),
          publishErrors: sent.errors,
          disconnects: sent.disconnects,
          generatorCpu: sent.cpu,
        },
      },
      // the baseline: as many devices, the same load, on the same platform, just before, without the flooding device
      baselines: { withoutFlood: base },
      machine: machine(),
    };
  } finally {
    await bench.close();
  }
}

export const floodScenario = benchScenario({
  name: 'flood',
  description: 'noisy neighbour, flood: N devices\' QoS 1 publish→PUBACK p99 while one device floods QoS 0 arrays, beside the same load without it',
  run,
  problems: (r) => {
    const acked = r.baselines.withoutFlood.framesAcknowledged + r.flood.framesAcknowledged;
    return [
      ...(acked !== r.others.framesStored ? [`flood: ${acked} frames of the paced devices acknowledged but ${r.others.framesStored} stored`] : []),
      ...(r.baselines.withoutFlood.publishErrors + r.flood.publishErrors ? ['flood: publish errors on the paced devices'] : []),
    ];
  },
});
