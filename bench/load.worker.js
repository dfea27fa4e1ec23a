// MQTT load generator for `drivewire bench`, on its own thread so it does not share the event loop
// with the broker it measures. Plain JavaScript: worker threads start outside tsx's loader.
// Each device keeps up to `window` QoS 1 publishes in flight (or publishes at `rate` frames/s);
// the time from publish to PUBACK is the time to a committed row, since the gateway acks only then.
import { parentPort, workerData } from 'node:worker_threads';
import mqtt from 'mqtt';

const { url, devices, durationMs, warmupMs, window: inflightMax, rate, frameBytes } = workerData;
const lastTs = new Map();
const latencies = [];
let acked = 0;
let ackedTotal = 0;
let errors = 0;
let measureFrom = 0;
let stopAt = 0;

/** A telemetry frame like a dongle's: raw PIDs, location and accelerometer extremes (~300 bytes). */
function frame(deviceIndex, seq) {
  // Strictly increasing per device, so every frame is in order and `ts` is its publish time.
  const t = Math.max(Date.now(), (lastTs.get(deviceIndex) ?? 0) + 1);
  lastTs.set(deviceIndex, t);
  const speed = (seq * 7) % 120;
  return JSON.stringify({
    id: `${deviceIndex}-${seq}`, ts: t,
    location: { lat: 32.7767 + (seq % 1000) * 1e-5, lon: -96.797 + deviceIndex * 1e-4, speed, heading: seq % 360 },
    accel: { maxX: 0.12, maxY: 0.31, maxZ: 9.9, minX: -0.1, minY: -0.2, minZ: 9.6 },
    pids: {
      '0C': ((800 + speed * 25) * 4).toString(16).padStart(4, '0'), '0D': speed.toString(16).padStart(2, '0'),
      '04': '5A', '05': '7B', '10': '01F4', '11': '33', '0B': '65', '2F': '80',
    },
    ...(frameBytes ? { data: { fuelType: 'x'.repeat(frameBytes) } } : {}),
  });
}

function connect(device) {
  return new Promise((resolve, reject) => {
    const client = mqtt.connect(url, {
      username: device.id, password: device.secret, clientId: device.id, reconnectPeriod: 0, connectTimeout: 30_000,
    });
    client.once('connect', () => resolve(client));
    client.once('error', reject);
  });
}

function drive(client, device, index) {
  const topic = `devices/${device.id}/frames`;
  let seq = 0;
  let inflight = 0;
  return new Promise((resolve) => {
    const send = () => {
      if (performance.now() >= stopAt) { if (inflight === 0) resolve(); return; }
      inflight++;
      const started = performance.now();
      client.publish(topic, frame(index, seq++), { qos: 1 }, (err) => {
        inflight--;
        const now = performance.now();
        if (err) errors++;
        else ackedTotal++;
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

const clients = await Promise.all(devices.map(connect));
const start = performance.now();
measureFrom = start + warmupMs;
stopAt = start + warmupMs + durationMs;
await Promise.all(clients.map((c, i) => drive(c, devices[i], i)));
await Promise.all(clients.map((c) => c.endAsync()));
const buffer = Float64Array.from(latencies);
parentPort.postMessage({ acked, ackedTotal, errors, measuredMs: durationMs, latencies: buffer }, [buffer.buffer]);
