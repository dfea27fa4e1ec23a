// Ingest scenario: N devices publish QoS 1 telemetry frames to the gateway; reports the
// sustained frames/s stored and the time from publish to committed row (= PUBACK, sent after commit).
import { batchFigures, round, runLoad, spread, startBenchPlatform, machine } from './harness.js';
import { bareAedes, rawCopy, storingAedes } from './baselines.js';
import { benchScenario, type BenchOptions } from './types.js';

/** One measurement on a fresh platform; `trips` false turns the trips stage off (DRIVEWIRE_TRIPS). */
async function measure(o: BenchOptions, trips: boolean) {
  const bench = await startBenchPlatform({ databaseUrl: o.databaseUrl, batchSize: o.batchSize, batchMs: o.batchMs, flags: { trips } });
  try {
    const devices = await bench.devices(o.devices);
    const loadOptions = { devices, durationMs: o.durationS * 1000, warmupMs: o.warmupS * 1000, window: o.window, rate: o.rate ?? 0 };
    const load = await runLoad({ ...loadOptions, url: bench.mqttUrl }, bench.monitor);
    const { knex } = bench.platform.db;
    const [{ n: stored }] = await knex('messages').whereIn('device_id', devices.map((d) => d.id)).count({ n: '*' });
    const metrics = await bench.metrics();
    const framesStoredPerSecond = round(load.acked / (load.measuredMs / 1000), 0);
    // The bare baselines run after the platform's load, on the same machine, with the same options.
    const bare = o.baselines === false ? null : await bareAedes(loadOptions);
    const db = { databaseUrl: o.databaseUrl, knex };
    const copy = bare && await rawCopy(db, Math.min(Math.max(Number(stored), 5000), 100_000));
    const storing = bare && await storingAedes(loadOptions, db, bare, bench.monitor);
    return {
      scenario: 'ingest',
      trips: trips ? 'on' : 'off',
      database: bench.database,
      versions: await bench.versions(),
      devices: o.devices,
      window: o.window,
      ratePerDevice: o.rate || 'unbounded',
      batchSize: bench.platform.config.ingestBatchSize,
      batchMs: bench.platform.config.ingestBatchMs,
      measuredSeconds: o.durationS,
      framesStoredPerSecond,
      publishToCommitMs: spread(load.latencies),
      framesAcknowledged: load.ackedTotal,
      framesStored: Number(stored),
      publishErrors: load.errors,
      eventLoopDelayMs: load.eventLoopDelayMs,
      processes: load.processes,
      ...batchFigures(metrics),
      baselines: bare && {
        bareAedes: bare,
        rawCopy: copy,
        storingAedes: storing,
        ratioToBareAedes: round(framesStoredPerSecond / bare.framesPerSecond, 2),
        ratioToRawCopy: copy && round(framesStoredPerSecond / copy.rowsPerSecond, 2),
        ratioToStoringAedes: storing && round(framesStoredPerSecond / storing.framesPerSecond, 2),
      },
      // Other work on the machine skews the figures: the 1-minute load average says how much there was.
      machine: machine(),
    };
  } finally {
    await bench.close();
  }
}

type Measurement = Awaited<ReturnType<typeof measure>>;

/**
 * `--trips compare`: trips off, then on, each on a fresh platform with the same options (the bare
 * baselines only after the second); `ratioOnToOff` = frames/s stored with trips / without.
 */
async function run(o: BenchOptions) {
  if (o.trips !== 'compare') return measure(o, o.trips !== 'off');
  const off = await measure({ ...o, baselines: false }, false);
  const on = await measure(o, true);
  const fps = (r: Measurement) => r.framesStoredPerSecond;
  const p99 = (r: Measurement) => r.publishToCommitMs.p99;
  return {
    scenario: 'ingest', trips: 'compare', versions: on.versions, off, on,
    ratioOnToOff: { framesStoredPerSecond: round(fps(on) / fps(off), 3), publishToCommitP99: round(p99(on) / p99(off), 3) },
  };
}

export const ingestScenario = benchScenario({
  name: 'ingest',
  description: 'N devices publish QoS 1 frames; frames/s stored and publish→commit latency',
  run,
  problems: (r) => ('off' in r ? [r.off, r.on] : [r]).flatMap((x) => [
    ...(x.framesStored !== x.framesAcknowledged ? [`ingest: ${x.framesAcknowledged} frames acknowledged but ${x.framesStored} stored`] : []),
    ...(x.publishErrors ? [`ingest: ${x.publishErrors} publish errors`] : []),
  ]),
});
