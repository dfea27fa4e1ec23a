// Connections scenario: N provisioned devices connect and authenticate from one load
// process (connections.child.js) and stay idle; reports the time to connect them all and what each
// idle connection costs the platform in RSS and heap, against a bare Aedes in a process of its own
// (bare-aedes.child.js), in the same run. Provisioning is timed apart: it is not the measurement; a
// few warm-up devices connect first and are not counted.
import v8 from 'node:v8';
import vm from 'node:vm';
import { performance } from 'node:perf_hooks';
import { round, startBenchPlatform, machine } from './harness.js';
import { startChild } from './child.js';
import type { LoadGeneratorFigures, ProcessFigures, ProcessMonitor } from './processes.js';
import { benchScenario, type BenchOptions } from './types.js';

export const DEFAULT_PARALLEL = 250;

/** A full collection before each memory reading, so heap figures are live objects, not garbage. */
v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

interface Memory { rss: number; heapUsed: number; heapTotal: number }

/**
 * RSS without the V8 heap pages committed but holding no live object: V8 grows and shrinks those on its
 * own schedule (its memory reducer can give back tens of MB a few seconds after a full collection),
 * which at small N is larger than what the devices add.
 */
const residentInUse = (m: Memory) => m.rss - (m.heapTotal - m.heapUsed);

/** A reading once two in a row (after a full collection each) agree within 256 KiB; at most ~5 s. */
async function settled(memory: () => Promise<Memory>): Promise<Memory> {
  let last = await memory();
  for (let i = 0; i < 20; i++) {
    await new Promise((r) => setTimeout(r, 250));
    const m = await memory();
    if (Math.abs(residentInUse(m) - residentInUse(last)) < 256 * 1024) return m;
    last = m;
  }
  return last;
}
interface Connected { ms: number; connected: number; failed: number; firstError: string | null; cpu: { user: number; system: number }; maxRssBytes: number }

/** What one broker (the platform, or the bare Aedes) tells about itself. */
interface Target { url: string; memory(): Promise<Memory>; connected(): Promise<number>; monitor?: ProcessMonitor }

async function waitFor(check: () => Promise<boolean>, boundMs: number): Promise<boolean> {
  const until = performance.now() + boundMs;
  while (!(await check())) {
    if (performance.now() > until) return false;
    await new Promise((r) => setTimeout(r, 100));
  }
  return true;
}

type Device = { id: string; secret: string };

/**
 * Devices connected before the measurement and not counted: the first connections pay once for code
 * compiled and buffers pooled, which would otherwise land on every device of a small run.
 */
const warmupDevices = (n: number) => Math.max(5, Math.min(100, Math.ceil(n / 100)));

/** Connects every device to the target from a fresh load process, holds them, reads the memory they add. */
async function measure(target: Target, warmup: Device[], devices: Device[], parallel: number) {
  const load = await startChild('./connections.child.js');
  try {
    const w = await load.ask<Connected>({ type: 'connect', url: target.url, devices: warmup, parallel }, 'connected');
    if (w.failed) throw new Error(`connections: ${w.failed} of ${warmup.length} warm-up devices could not connect: ${w.firstError}`);
    await waitFor(async () => (await target.connected()) >= warmup.length, 30_000);
    const before = await settled(target.memory);
    const from = await target.monitor?.mark();
    const r = await load.ask<Connected>({ type: 'connect', url: target.url, devices, parallel }, 'connected');
    const to = await target.monitor?.mark();
    // The broker counts a client once its CONNACK went out: wait until it counts them all (bounded).
    const seen = await waitFor(async () => (await target.connected()) >= warmup.length + r.connected, 30_000);
    const after = await settled(target.memory);
    const { open, dropped } = await load.ask<{ open: number; dropped: number }>({ type: 'status' });
    const loadGenerator: LoadGeneratorFigures = { where: 'child process', cpuUserSeconds: round(r.cpu.user, 3), cpuSystemSeconds: round(r.cpu.system, 3), peakRssBytes: r.maxRssBytes };
    const n = Math.max(1, r.connected);
    return {
      figures: {
        devices: devices.length,
        connected: r.connected,
        failed: r.failed,
        ...(r.firstError ? { firstError: r.firstError } : {}),
        countedByBroker: (seen ? warmup.length + r.connected : await target.connected()) - warmup.length,
        stillOpenAfterHold: open - warmup.length,
        droppedWhileHeld: dropped,
        connectMs: round(r.ms, 0),
        connectionsPerSecond: round(r.connected / (r.ms / 1000), 0),
        rssBeforeBytes: before.rss,
        rssAfterBytes: after.rss,
        /** Growth per device of the RSS less V8's committed-but-unused heap (residentInUse), each after a full collection. */
        rssPerDeviceBytes: round((residentInUse(after) - residentInUse(before)) / n, 0),
        heapPerDeviceBytes: round((after.heapUsed - before.heapUsed) / n, 0),
      },
      processes: from && to && target.monitor ? target.monitor.figures(from, to, loadGenerator) : null as ProcessFigures | null,
      loadGenerator,
    };
  } finally {
    await load.close();
  }
}

async function run(o: BenchOptions) {
  const parallel = o.parallel ?? DEFAULT_PARALLEL;
  const bench = await startBenchPlatform({ databaseUrl: o.databaseUrl });
  try {
    const provisionStarted = performance.now();
    const warm = warmupDevices(o.devices);
    const all = await bench.devices(warm + o.devices);
    const provisioningSeconds = round((performance.now() - provisionStarted) / 1000);
    const [warmup, devices] = [all.slice(0, warm), all.slice(warm)];
    const memory = async (): Promise<Memory> => { gc(); gc(); const { rss, heapUsed, heapTotal } = process.memoryUsage(); return { rss, heapUsed, heapTotal }; };
    const platform = await measure({
      url: bench.mqttUrl, memory, monitor: bench.monitor,
      connected: () => bench.metric('drivewire_gateway_connected_devices'),
    }, warmup, devices, parallel);
    let bare: Awaited<ReturnType<typeof measure>> | null = null;
    if (o.baselines !== false) {
      const aedes = await startChild('./bare-aedes.child.js', ['--expose-gc']);
      const ask = () => aedes.ask<Memory & { connected: number }>({ type: 'memory' });
      try {
        bare = await measure({ url: String(aedes.ready.url), memory: ask, connected: async () => (await ask()).connected }, warmup, devices, parallel);
      } finally {
        await aedes.close();
      }
    }
    const p = platform.figures;
    const b = bare?.figures;
    return {
      scenario: 'connections',
      database: bench.database,
      versions: await bench.versions(),
      devices: o.devices,
      warmupDevices: warmup.length,
      parallelConnects: parallel,
      provisioningSeconds,
      platform: p,
      processes: platform.processes,
      baselines: b && {
        bareAedes: { ...b, loadGenerator: bare!.loadGenerator },
        ratioToBareAedes: {
          connectionsPerSecond: round(p.connectionsPerSecond / b.connectionsPerSecond, 2),
          rssPerDevice: b.rssPerDeviceBytes > 0 ? round(p.rssPerDeviceBytes / b.rssPerDeviceBytes, 2) : null,
          heapPerDevice: b.heapPerDeviceBytes > 0 ? round(p.heapPerDeviceBytes / b.heapPerDeviceBytes, 2) : null,
        },
      },
      machine: machine(),
    };
  } finally {
    await bench.close();
  }
}

export const connectionsScenario = benchScenario({
  name: 'connections',
  description: 'N idle authenticated devices (--devices, default 10000); time to connect, RSS and heap per device; ratio to bare Aedes',
  run,
  problems: (r) => [
    ...(r.platform.connected !== r.devices ? [`connections: ${r.platform.connected} of ${r.devices} devices connected${r.platform.firstError ? ` (${r.platform.firstError})` : ''}`] : []),
    ...(r.platform.droppedWhileHeld ? [`connections: ${r.platform.droppedWhileHeld} idle connections dropped`] : []),
  ],
});
