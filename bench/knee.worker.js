// Open-loop MQTT load generator for the knee scenario, on its own thread: it publishes at a
// fixed total rate whatever the acknowledgements do (a closed loop slows down with the server and hides
// its knee), round-robin over the devices, one step at a time as the bench asks ('step' → 'stepped').
// Latency is measured from each frame's scheduled time, not from when the publish call ran, so a
// generator that falls behind does not hide the wait (coordinated omission); how far it fell behind is
// reported as `maxLagMs`. Plain JavaScript: worker threads start outside tsx's loader.
import { performance } from 'node:perf_hooks';
import { parentPort, workerData } from 'node:worker_threads';
import { connect, cpuSince, frame, lastStamp, threadCpu } from './load.common.js';

const { url, devices, qos } = workerData;
/** How often the scheduler wakes up and sends every frame due by then. */
const TICK_MS = 5;

let finishing = false;
let disconnects = 0;
const clients = await Promise.all(devices.map((d) => connect(url, d)));
for (const c of clients) c.on('close', () => { if (!finishing) disconnects++; });
const topics = devices.map((d) => `devices/${d.id}/frames`);
const seqs = devices.map(() => 0);
/** Acknowledged frames' ts per device (QoS 1; unique per device): the bench checks each is stored exactly once. */
const acked = devices.map(() => []);
const steps = [];
let next = 0;
let running = null;
let sentTotal = 0;
let ackedTotal = 0;
let pending = 0;
let errors = 0;

function publish(step, scheduledAt) {
  const i = next++ % clients.length;
  const seq = seqs[i]++;
  step.sent++;
  sentTotal++;
  if (qos === 0) {
    clients[i].publish(topics[i], frame(i, seq), { qos: 0 }, (err) => { if (err) errors++; });
    return;
  }
  pending++;
  step.pending++;
  const payload = frame(i, seq);
  const ts = lastStamp(i);
  clients[i].publish(topics[i], payload, { qos: 1 }, (err) => {
    pending--;
    step.pending--;
    if (err) { errors++; return; }
    ackedTotal++;
    acked[i].push(ts);
    step.latencies.push(performance.now() - scheduledAt);
    if (running === step) step.ackedInStep++;
  });
}

/**
 * Publishes `rate` frames/s in total for `ms`; the k-th frame of the step is due at t0 + k/rate. A warm-up
 * step is not kept in the steps (its frames still count in the totals and the acknowledged seqs).
 */
function runStep(index, rate, ms, warmup) {
  return new Promise((resolve) => {
    const step = { latencies: [], sent: 0, ackedInStep: 0, pending: 0, maxLagMs: 0 };
    if (!warmup) steps[index] = step;
    const cpu = threadCpu();
    const elu = performance.eventLoopUtilization();
    const total = Math.round((rate * ms) / 1000);
    const t0 = performance.now();
    running = step;
    const tick = () => {
      const now = performance.now();
      const due = Math.min(total, Math.floor(((now - t0) * rate) / 1000));
      while (step.sent < due) {
        const scheduledAt = t0 + (step.sent * 1000) / rate;
        step.maxLagMs = Math.max(step.maxLagMs, now - scheduledAt);
        publish(step, scheduledAt);
      }
      if (now - t0 < ms) return;
      clearInterval(timer);
      running = null;
      resolve({
        type: 'stepped', index, sent: step.sent, ackedInStep: step.ackedInStep, maxLagMs: step.maxLagMs, seconds: (performance.now() - t0) / 1000,
        thread: { cpu: cpuSince(cpu), eventLoopUtilization: performance.eventLoopUtilization(elu).utilization },
      });
    };
    const timer = setInterval(tick, TICK_MS);
  });
}

/** Waits (at most drainMs) for every QoS 1 frame's PUBACK, then disconnects; QoS 0 frames are flushed by a graceful end. */
async function finish(drainMs) {
  const until = performance.now() + drainMs;
  while (pending > 0 && performance.now() < until) await new Promise((r) => setTimeout(r, 20));
  finishing = true;
  const unacknowledged = pending;
  await Promise.all(clients.map((c) => (unacknowledged ? new Promise((r) => c.end(true, {}, r)) : c.endAsync())));
  const latencies = steps.map((s) => Float64Array.from(s.latencies));
  parentPort.postMessage({
    type: 'done', sentTotal, ackedTotal, errors, disconnects, unacknowledged,
    unacknowledgedPerStep: steps.map((s) => s.pending), latencies, acked,
  }, latencies.map((l) => l.buffer));
}

parentPort.on('message', async (m) => {
  if (m.type === 'step') parentPort.postMessage(await runStep(m.index, m.rate, m.ms, m.warmup));
  else if (m.type === 'finish') await finish(m.drainMs);
});
parentPort.postMessage({ type: 'ready' });
