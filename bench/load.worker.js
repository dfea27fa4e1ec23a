// MQTT load generator for `drivewire bench`, on its own thread so it does not share the event loop
// with the broker it measures. Plain JavaScript: worker threads start outside tsx's loader.
// Each device keeps up to `window` QoS 1 publishes in flight (or publishes at `rate` frames/s);
// the time from publish to PUBACK is the time to a committed row, since the gateway acks only then.
// It tells the bench when the measured window starts and ends ('measuring', 'measured'), so the bench
// can read each process's CPU over that window, and reports its own thread's CPU over it.
// With `ackTimes`, it also returns the wall-clock time (epoch ms) of every PUBACK, warm-up included, in the order they
// came: the history scenario reads the longest gap between consecutive acknowledgements (an ingest stall) from them.
import { performance } from 'node:perf_hooks';
import { parentPort, workerData } from 'node:worker_threads';
import { connect, cpuSince, frame, threadCpu } from './load.common.js';

const { url, devices, durationMs, warmupMs, window: inflightMax, rate, frameBytes, ackTimes: keepAckTimes } = workerData;
const latencies = [];
const ackTimes = [];
// performance.now() plus this is the wall clock (Date.now()) at sub-ms resolution; a worker's performance.timeOrigin
// is not its own start, so timeOrigin + now() runs seconds behind the main thread's Date.now().
const epochOffset = Date.now() - performance.now();
let acked = 0;
let ackedTotal = 0;
let errors = 0;
let measureFrom = 0;
let stopAt = 0;

function drive(client, device, index) {
  const topic = `devices/${device.id}/frames`;
  let seq = 0;
  let inflight = 0;
  return new Promise((resolve) => {
    const send = () => {
      if (performance.now() >= stopAt) { if (inflight === 0) resolve(); return; }
      inflight++;
      const started = performance.now();
      client.publish(topic, frame(index, seq++, frameBytes), { qos: 1 }, (err) => {
        inflight--;
        const now = performance.now();
        if (err) errors++;
        else { ackedTotal++; if (keepAckTimes) ackTimes.push(epochOffset + now); }
        if (!err && started >= measureFrom && now <= stopAt) { acked++; latencies.push(now - started); }
        if (rate === 0) send();
        else if (now >= stopAt && inflight === 0) resolve();
      });
    };
    if (rate === 0) for (let i = 0; i < inflightMax; i++) send();
    else {
      // Each device starts at a random phase, so a paced fleet does not publish in lockstep.
      const tick = () => {
        if (performance.now() >= stopAt) { clearInterval(timer); if (inflight === 0) resolve(); return; }
        if (inflight < inflightMax) send();
      };
      let timer;
      setTimeout(() => { tick(); timer = setInterval(tick, 1000 / rate); }, Math.random() * (1000 / rate));
    }
  });
}

const clients = await Promise.all(devices.map((d) => connect(url, d)));
const start = performance.now();
measureFrom = start + warmupMs;
stopAt = start + warmupMs + durationMs;
// This thread's CPU and event loop utilization over the measured window.
let cpuAtStart = null;
let eluAtStart = null;
let measured = null;
const beginWindow = () => {
  cpuAtStart = threadCpu();
  eluAtStart = performance.eventLoopUtilization();
  parentPort.postMessage({ type: 'measuring' });
};
const endWindow = () => {
  if (measured) return;
  measured = { cpu: cpuSince(cpuAtStart), eventLoopUtilization: eluAtStart && performance.eventLoopUtilization(eluAtStart).utilization };
  parentPort.postMessage({ type: 'measured' });
};
const timers = [setTimeout(beginWindow, warmupMs), setTimeout(endWindow, warmupMs + durationMs)];
await Promise.all(clients.map((c, i) => drive(c, devices[i], i)));
timers.forEach(clearTimeout);
if (!eluAtStart) beginWindow();
endWindow();
await Promise.all(clients.map((c) => c.endAsync()));
const buffer = Float64Array.from(latencies);
const acks = Float64Array.from(ackTimes);
parentPort.postMessage({ type: 'done', acked, ackedTotal, errors, measuredMs: durationMs, latencies: buffer, ackTimes: acks, thread: measured },
  [buffer.buffer, acks.buffer]);
