// What the bench load generators share (load.worker.js, knee.worker.js, connections.child.js): a
// dongle-like telemetry frame, an authenticated MQTT connection, and the CPU of the calling thread.
// Plain JavaScript: worker threads and child processes start outside tsx's loader.
import fs from 'node:fs';
import mqtt from 'mqtt';

const lastTs = new Map();

/**
 * A telemetry frame like a dongle's: raw PIDs, location and accelerometer extremes (~300 bytes).
 * Its id is `<deviceIndex>-<seq>`; its `ts` is unique per device (lastStamp gives it), which is how the knee
 * scenario checks that every acknowledged frame was stored exactly once.
 */
export function frame(deviceIndex, seq, frameBytes = 0) {
  // Strictly increasing per device, so every frame is in order and `ts` is its publish time.
  const t = Math.max(Date.now(), (lastTs.get(deviceIndex) ?? 0) + 1);
  lastTs.set(deviceIndex, t);
  return JSON.stringify(frameBody(deviceIndex, seq, t, frameBytes));
}

/** The `ts` of the device's latest frame(). */
export const lastStamp = (deviceIndex) => lastTs.get(deviceIndex);

/** frame()'s body, stamped `ts` (ms): bench/replay-instructions.ts replays the same frames at times of its own. */
export function frameBody(deviceIndex, seq, ts, frameBytes = 0) {
  const speed = (seq * 7) % 120;
  return {
    id: `${deviceIndex}-${seq}`, ts,
    location: { lat: 32.7767 + (seq % 1000) * 1e-5, lon: -96.797 + deviceIndex * 1e-4, speed, heading: seq % 360 },
    accel: { maxX: 0.12, maxY: 0.31, maxZ: 9.9, minX: -0.1, minY: -0.2, minZ: 9.6 },
    pids: {
      '0C': ((800 + speed * 25) * 4).toString(16).padStart(4, '0'), '0D': speed.toString(16).padStart(2, '0'),
      '04': '5A', '05': '7B', '10': '01F4', '11': '33', '0B': '65', '2F': '80',
    },
    ...(frameBytes ? { data: { fuelType: 'x'.repeat(frameBytes) } } : {}),
  };
}

/**
 * Connects as the device: the gateway requires client id = username = device id, password = its secret.
 * Rejects on a refused CONNACK and on a connection closed before it (no reconnection).
 */
export function connect(url, device, options = {}) {
  return new Promise((resolve, reject) => {
    const client = mqtt.connect(url, {
      username: device.id, password: device.secret, clientId: device.id, reconnectPeriod: 0, connectTimeout: 30_000, ...options,
    });
    const fail = (err) => { client.end(true); reject(err); };
    const closed = () => fail(new Error('connection closed before CONNACK'));
    client.once('connect', () => {
      client.off('error', fail);
      client.off('close', closed);
      client.on('error', () => {}); // a later error (a reset) must not throw: the caller watches 'close'
      resolve(client);
    });
    client.once('error', fail);
    client.once('close', closed);
  });
}

/** Runs `run(i)` for i in 0..n-1, at most `inflight` at once. */
export async function bounded(n, inflight, run) {
  let next = 0;
  const lane = async () => { while (next < n) await run(next++); };
  await Promise.all(Array.from({ length: Math.min(inflight, n) }, lane));
}

/**
 * Connects each device (at most `parallel` CONNECTs in flight: a bounded stream, not N at once) and hands each
 * client to `setUp` (which may reject, as a refused connection does); resolves with the failures' count and the first.
 */
export async function connectEach(url, devices, parallel, setUp) {
  let failed = 0;
  let firstError = null;
  await bounded(devices.length, parallel, async (i) => {
    try {
      await setUp(await connect(url, devices[i]), devices[i]);
    } catch (err) {
      failed++;
      firstError ??= err.message;
    }
  });
  return { failed, firstError };
}

/** USER_HZ: Linux reports CPU times in /proc in hundredths of a second on every architecture. */
const TICKS = 100;

/**
 * CPU seconds { user, system } of the calling thread (Linux, /proc/thread-self/stat, 10 ms resolution);
 * null elsewhere. Node 20 has no per-thread CPU API (process.cpuUsage() in a worker is the whole process's).
 */
export function threadCpu() {
  try {
    const text = fs.readFileSync('/proc/thread-self/stat', 'utf8');
    const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { user: Number(f[11]) / TICKS, system: Number(f[12]) / TICKS };
  } catch {
    return null;
  }
}

/** CPU seconds between two threadCpu() readings; null when either is. */
export function cpuSince(a, b = threadCpu()) {
  return a && b ? { user: b.user - a.user, system: b.system - a.system } : null;
}
