// Knee scenario: an open-loop load (knee.worker.js) offers a fixed total rate of frames,
// QoS 0 or 1, stepped up (--steps, each --step-seconds long); each step records offered against stored
// frames/s, the backlog, and (QoS 1) publish→PUBACK latency, which is publish→commit since the gateway
// acknowledges after the commit. The knee is the last step of the run where the platform keeps up:
// stored ≥ 95% of offered and, at QoS 1, p99 under 1 s with every frame acknowledged. The same steps run
// against a bare Aedes in the same run. At the end, once the backlog drained, every acknowledged frame
// must be stored exactly once.
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { batchTotals, batchesBetween, quantile, round, sample, startBenchPlatform, machine, type BatchTotals } from './harness.js';
import { startBareAedes, startStoringAedes } from './baselines.js';
import { workerThreadFigures, type Cpu, type Mark, type ProcessMonitor } from './processes.js';
import { benchScenario, type BenchOptions } from './types.js';

export const DEFAULT_STEPS = [1000, 2000, 4000, 8000, 12_000, 16_000];
/** A step keeps up when at least this share of what it offered is stored in it… */
const KEPT_UP = 0.95;
/** …and (QoS 1) its p99 publish→PUBACK stays under this. */
const P99_BOUND_MS = 1000;
/** The generator fell behind its own schedule by more than this: the step did not offer its rate. */
const GENERATOR_LAG_MS = 250;

type Device = { id: string; secret: string };
interface Stepped { index: number; sent: number; ackedInStep: number; maxLagMs: number; seconds: number; thread: { cpu: Cpu | null; eventLoopUtilization: number } }
interface Done {
  sentTotal: number; ackedTotal: number; errors: number; disconnects: number; unacknowledged: number;
  unacknowledgedPerStep: number[]; latencies: Float64Array[]; /** each device's acknowledged frames' ts */ acked: number[][];
}

/** The open-loop generator on its own thread, driven one step at a time. */
function startKneeLoad(url: string, devices: Device[], qos: 0 | 1) {
  const worker = new Worker(new URL('./knee.worker.js', import.meta.url), { workerData: { url, devices, qos } });
  const waiting: { resolve(m: unknown): void; reject(e: Error): void }[] = [];
  let dead: Error | null = null;
  /** The worker's next message, of the type its request is answered with. */
  const next = <T>() => new Promise<T>((resolve, reject) => (dead ? reject(dead) : waiting.push({ resolve, reject })));
  const failAll = (err: Error) => { dead ??= err; for (const w of waiting.splice(0)) w.reject(err); };
  worker.on('message', (m) => waiting.shift()?.resolve(m));
  worker.once('error', failAll);
  worker.once('exit', (code) => failAll(new Error(`knee load generator exited with code ${code}`)));
  const ready = next<{ type: 'ready' }>();
  return {
    ready,
    step(index: number, rate: number, ms: number, warmup = false): Promise<Stepped> {
      const answer = next<Stepped>();
      worker.postMessage({ type: 'step', index, rate, ms, warmup });
      return answer;
    },
    async finish(drainMs: number): Promise<Done> {
      const answer = next<Done>();
      worker.postMessage({ type: 'finish', drainMs });
      const done = await answer;
      await worker.terminate();
      return done;
    },
  };
}

/** A step's frames were stored (≥ KEPT_UP of those sent) and the generator sent them on schedule. */
const generatorLimited = (r: { stepped: Stepped }) => r.stepped.maxLagMs > GENERATOR_LAG_MS;
const throughputKeptUp = (r: { stored: number; stepped: Stepped }) => r.stored >= KEPT_UP * r.stepped.sent && !generatorLimited(r);

const cores = (cpuS: number | null, seconds: number) => (cpuS === null ? null : round(cpuS / seconds, 2));

/**
 * What a broker has taken so far: `stored`, rows committed by the platform or the storing floor, PUBLISHes handled by
 * the bare Aedes; `batches`, the platform's ingest batches (its metrics), which tell whether a step that fell behind had
 * its backlog in the batches or before them.
 */
interface Observed { stored: number; batches?: BatchTotals }
type Observe = () => Promise<Observed>;
const storedOf = (observe: Observe) => async () => (await observe()).stored;

/**
 * Steps through the offered rates against one broker (`observe`); stops after the first step that does not keep up in
 * throughput (the steps after it would only pile up backlog).
 */
async function stepThrough(url: string, devices: Device[], o: BenchOptions, observe: Observe, monitor: ProcessMonitor, drainMs: number) {
  const stored = storedOf(observe);
  const qos = o.qos ?? 1;
  const rates = o.steps ?? DEFAULT_STEPS;
  const ms = (o.stepSeconds ?? 5) * 1000;
  const load = startKneeLoad(url, devices, qos);
  await load.ready;
  // Not measured: the first frames pay for compiled code, prepared statements, the first pages of the tables.
  // Its backlog drains (bounded) before the first step, so that step is not credited with it.
  if (o.warmupS) {
    const base = await stored();
    const warm = await load.step(-1, rates[0], o.warmupS * 1000, true);
    await drain(stored, base + warm.sent, 10_000, 1000);
  }
  const reading = async () => {
    const [{ stored: n, batches }, mark] = await Promise.all([observe(), monitor.mark()]);
    return { n, mark, at: performance.now(), batches };
  };
  const first = await reading();
  let before = first;
  let sentSoFar = 0;
  const raw: { rate: number; stepped: Stepped; stored: number; seconds: number; backlog: number; from: Mark; to: Mark; batches?: ReturnType<typeof batchesBetween> }[] = [];
  for (const [index, rate] of rates.entries()) {
    const stepped = await load.step(index, rate, ms);
    const after = await reading();
    sentSoFar += stepped.sent;
    raw.push({ rate, stepped, stored: after.n - before.n, seconds: (after.at - before.at) / 1000, backlog: sentSoFar - (after.n - first.n), from: before.mark, to: after.mark,
      ...(before.batches && after.batches ? { batches: batchesBetween(before.batches, after.batches) } : {}) });
    before = after;
    if (!throughputKeptUp(raw.at(-1)!)) break;
  }
  // The load generator's thread over the whole stepping: the sum of its steps (the gaps between them are idle).
  const cpus = raw.map((r) => r.stepped.thread.cpu);
  const stepSeconds = raw.reduce((t, r) => t + r.stepped.seconds, 0);
  const thread = {
    cpu: cpus.every(Boolean) ? cpus.reduce<Cpu>((t, c) => ({ user: t.user + c!.user, system: t.system + c!.system }), { user: 0, system: 0 }) : null,
    eventLoopUtilization: raw.reduce((t, r) => t + r.stepped.thread.eventLoopUtilization * r.stepped.seconds, 0) / Math.max(stepSeconds, 1e-9),
  };
  const processes = monitor.figures(first.mark, before.mark, workerThreadFigures(thread));
  const done = await load.finish(drainMs);
  const steps = raw.map((r, i) => {
    const lat = done.latencies[i];
    const unacknowledged = qos === 1 ? done.unacknowledgedPerStep[i] : null;
    const p99 = qos === 1 ? round(quantile(lat, 0.99)) : null;
    const keptUp = throughputKeptUp(r) && (qos === 0 || (unacknowledged === 0 && p99 !== null && p99 < P99_BOUND_MS));
    const p = monitor.figures(r.from, r.to, workerThreadFigures(r.stepped.thread));
    const lg = p.loadGenerator && p.loadGenerator.cpuUserSeconds !== null ? p.loadGenerator.cpuUserSeconds + (p.loadGenerator.cpuSystemSeconds ?? 0) : null;
    return {
      offeredFramesPerSecond: r.rate,
      sentFramesPerSecond: round(r.stepped.sent / r.stepped.seconds, 0),
      storedFramesPerSecond: round(r.stored / r.seconds, 0),
      storedShare: round(r.stored / Math.max(1, r.stepped.sent), 3),
      backlogFrames: r.backlog,
      publishToAckMs: qos === 1 ? { p50: round(quantile(lat, 0.5)), p99, max: round(quantile(lat, 1)) } : null,
      unacknowledged,
      generatorLagMs: round(r.stepped.maxLagMs),
      cpuCores: {
        process: cores(p.platform.cpuUserSeconds + p.platform.cpuSystemSeconds, p.windowSeconds),
        withoutLoadGenerator: cores(p.platform.cpuSecondsWithoutLoadGenerator, p.windowSeconds),
        loadGenerator: cores(lg, p.windowSeconds),
        postgres: 'backends' in p.postgres ? cores(p.postgres.cpuUserSeconds + p.postgres.cpuSystemSeconds, p.windowSeconds) : null,
      },
      ...(r.batches ? { batches: r.batches } : {}),
      keptUp,
      ...(generatorLimited(r) ? { generatorLimited: true } : {}),
    };
  });
  // The knee: the last of the leading steps that kept up; a lower bound when every step offered did.
  const leading = steps.findIndex((s) => !s.keptUp);
  const kneeStep = leading === -1 ? steps.at(-1) : steps[leading - 1];
  const generatorBound = leading !== -1 && 'generatorLimited' in steps[leading];
  return {
    steps,
    stepsNotRun: rates.slice(steps.length),
    knee: kneeStep ? { offeredFramesPerSecond: kneeStep.offeredFramesPerSecond, storedFramesPerSecond: kneeStep.storedFramesPerSecond } : null,
    /** Every step kept up (the knee is above the last one), or the load generator, not the broker, fell behind. */
    kneeIsLowerBound: leading === -1 || generatorBound,
    done,
    processes,
  };
}

/** Waits (bounded) until `stored` reaches `target` or stops moving; whether it got there. */
async function drain(stored: () => Promise<number>, target: number, boundMs: number, stillMs = 5000) {
  const started = performance.now();
  let last = await stored();
  let movedAt = started;
  while (last < target && performance.now() - started < boundMs && performance.now() - movedAt < stillMs) {
    await new Promise((r) => setTimeout(r, 100));
    const n = await stored();
    if (n !== last) { last = n; movedAt = performance.now(); }
  }
  return { seconds: round((performance.now() - started) / 1000), reached: last >= target, stalled: last < target && performance.now() - movedAt >= stillMs };
}

async function run(o: BenchOptions) {
  const qos = o.qos ?? 1;
  const drainMs = o.smoke ? 20_000 : 120_000;
  const bench = await startBenchPlatform({ databaseUrl: o.databaseUrl, batchSize: o.batchSize, batchMs: o.batchMs });
  try {
    const provisionStarted = performance.now();
    const devices = await bench.devices(o.devices);
    const provisioningSeconds = round((performance.now() - provisionStarted) / 1000);
    // one reading of the gateway's metrics gives both
    const observePlatform: Observe = async () => {
      const text = await bench.metrics();
      return { stored: sample(text, 'drivewire_gateway_frames_stored_total') || 0, batches: batchTotals(text) };
    };
    const platform = await stepThrough(bench.mqttUrl, devices, o, observePlatform, bench.monitor, drainMs);
    const { done } = platform;
    // QoS 1: the worker waited for the PUBACKs (each sent after its commit); QoS 0: wait for the rows.
    const drained = qos === 0 ? await drain(storedOf(observePlatform), done.sentTotal, drainMs) : { seconds: null, reached: done.unacknowledged === 0, stalled: false };
    // Exactly once: every acknowledged frame (QoS 1) or every frame sent (QoS 0) has one row.
    const { knex } = bench.platform.db;
    // a frame's ts is unique per device (bench/load.common.js), so (device, ts) names it
    const rows: { device_id: string; ts: Date }[] = await knex('messages').select('device_id', 'ts').whereIn('device_id', devices.map((d) => d.id));
    const index = new Map(devices.map((d, i) => [d.id, i]));
    const stored = new Set(rows.map((r) => `${index.get(r.device_id)}:${new Date(r.ts).getTime()}`));
    const duplicates = rows.length - stored.size;
    let lost: number | null = 0;
    if (qos === 1) {
      for (const [i, stamps] of done.acked.entries()) for (const ts of stamps) if (!stored.has(`${i}:${ts}`)) lost++;
    } else {
      // QoS 0 is acknowledged by nothing: a frame not stored once the rows stopped coming is lost; still coming at the bound, unknown.
      lost = drained.reached || drained.stalled ? Math.max(0, done.sentTotal - stored.size) : null;
    }
    /** The same steps against a baseline broker, closed after them; its steps, its knee and the platform's ratio to it. */
    const against = async (broker: { url: string; close(): Promise<void> }, taken: () => number) => {
      const base = await stepThrough(broker.url, devices, o, async () => ({ stored: taken() }), bench.monitor, drainMs).finally(() => broker.close());
      const baseKnee = base.knee?.offeredFramesPerSecond;
      return {
        figures: { steps: base.steps, stepsNotRun: base.stepsNotRun, knee: base.knee, kneeIsLowerBound: base.kneeIsLowerBound },
        knee: baseKnee,
        ratio: knee && baseKnee ? round(knee / baseKnee, 2) : null,
        /** The baseline kept up at every step offered: its knee is higher, the ratio lower than this. */
        ratioIsUpperBound: base.kneeIsLowerBound && !platform.kneeIsLowerBound,
      };
    };
    const knee = platform.knee?.offeredFramesPerSecond;
    // Bare Aedes's "stored" frames are the PUBLISHes it handled: it stores nothing.
    const bare = o.baselines === false ? null : await startBareAedes().then((b) => against(b, () => b.published()));
    // The storing floor's are the rows it committed, payloads as they came, each then acknowledged (bench/baselines.ts);
    // it stores QoS 1 frames only.
    const floor = o.baselines === false || qos !== 1 ? null
      : await startStoringAedes({ databaseUrl: o.databaseUrl, knex }).then((f) => against(f, () => f.stored()));
    return {
      scenario: 'knee',
      database: bench.database,
      versions: await bench.versions(),
      devices: o.devices,
      qos,
      stepSeconds: o.stepSeconds ?? 5,
      warmupSeconds: o.warmupS,
      provisioningSeconds,
      keptUpWhen: `stored ≥ ${KEPT_UP * 100}% of sent${qos === 1 ? `, p99 publish→PUBACK < ${P99_BOUND_MS} ms, every frame acknowledged` : ''}, generator on schedule (lag ≤ ${GENERATOR_LAG_MS} ms)`,
      steps: platform.steps,
      stepsNotRun: platform.stepsNotRun,
      knee: platform.knee,
      kneeIsLowerBound: platform.kneeIsLowerBound,
      drain: drained,
      framesSent: done.sentTotal,
      framesAcknowledged: qos === 1 ? done.ackedTotal : null,
      framesStored: stored.size,
      lost,
      duplicates,
      unacknowledged: qos === 1 ? done.unacknowledged : null,
      publishErrors: done.errors,
      disconnects: done.disconnects,
      processes: platform.processes,
      baselines: bare && {
        bareAedes: bare.figures,
        ratioToBareAedes: bare.ratio,
        ratioIsUpperBound: bare.ratioIsUpperBound,
        storingAedes: floor && {
          ...floor.figures,
          /** The floor's knee over bare Aedes's: the most a storing broker's knee can be here, as a share of it. */
          ratioToBareAedes: floor.knee && bare.knee ? round(floor.knee / bare.knee, 2) : null,
        },
        ratioToStoringAedes: floor?.ratio ?? null,
        ratioToStoringAedesIsUpperBound: floor?.ratioIsUpperBound ?? false,
      },
      machine: machine(),
    };
  } finally {
    await bench.close();
  }
}

export const kneeScenario = benchScenario({
  name: 'knee',
  description: 'open-loop offered frames/s stepped up (--steps, --qos); offered vs stored, p99, the knee; ratios to bare Aedes and the storing floor',
  run,
  problems: (r) => [
    ...(r.lost ? [`knee: ${r.lost} ${r.qos === 1 ? 'acknowledged ' : ''}frames not stored`] : []),
    ...(r.duplicates ? [`knee: ${r.duplicates} frames stored more than once`] : []),
    ...(r.publishErrors ? [`knee: ${r.publishErrors} publish errors`] : []),
    ...(r.disconnects ? [`knee: ${r.disconnects} devices disconnected during the load`] : []),
  ],
});
