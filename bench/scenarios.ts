import type { BenchOptions, BenchScenario } from './types.js';
import { connectionsLimitProblem } from './limits.js';

export type { BenchOptions, BenchScenario };

type Loader = () => Promise<BenchScenario>;

export interface BenchScenarioEntry {
  name: string;
  description: string;
  load: Loader;
  /** Its devices when --devices is not given (default: the command's). */
  defaultDevices?: number;
  /** Its publishes in flight per device when --window is not given (default: the command's). */
  defaultWindow?: number;
  /** Runs on PostgreSQL only: refused on the embedded database when named, left out when every scenario runs. */
  needsPostgres?: boolean;
  /** `--smoke`: what this scenario runs with on top of the shared smoke options. */
  smoke?: Partial<BenchOptions>;
  /** Left out of `--smoke` over every scenario: another scenario's smoke runs the same code. */
  notInSmoke?: boolean;
  /** Why these options cannot run here (a clear error before anything starts), or null. */
  check?(o: BenchOptions): string | null;
}

/**
 * The scenarios, in one explicit list. Each is loaded only when run, so listing them (and every
 * other CLI command) does not load the whole platform.
 */
export const BENCH_SCENARIOS: BenchScenarioEntry[] = [
  { name: 'ingest', description: 'N devices publish QoS 1 frames; frames/s stored and publish→commit latency',
    load: async () => (await import('./ingest.bench.js')).ingestScenario },
  { name: 'rules', description: 'N devices with M rules each; rule events/s and publish→webhook latency',
    load: async () => (await import('./rules.bench.js')).rulesScenario },
  { name: 'webhooks', description: 'delivery alone: the queued webhooks of N devices × M rules drained by one worker; webhooks/s, CPU per webhook; ratio to a bare http client',
    load: async () => (await import('./webhooks.bench.js')).webhooksScenario },
  { name: 'neighbours', description: 'noisy neighbour, hanging receiver: tenant Y\'s publish→webhook p99 with tenant X\'s 150 subscriptions to a receiver that never answers, beside a baseline without them',
    load: async () => (await import('./neighbours.bench.js')).neighboursScenario },
  { name: 'api', description: 'GET …/messages under autocannon, idle or during ingest; ratio to bare Fastify + pg',
    load: async () => (await import('./api.bench.js')).apiScenario },
  { name: 'connections', description: 'N idle authenticated devices (default 10000); time to connect, RSS and heap per device; ratio to bare Aedes',
    load: async () => (await import('./connections.bench.js')).connectionsScenario,
    defaultDevices: 10_000, smoke: { devices: 50 },
    check: (o) => connectionsLimitProblem(o.devices) },
  { name: 'knee', description: 'open-loop offered frames/s stepped up (--steps, --qos); offered vs stored, p99, the knee; ratio to bare Aedes',
    load: async () => (await import('./knee.bench.js')).kneeScenario,
    smoke: { steps: [100, 200], stepSeconds: 2 },
    // Frame timestamps are ms and strictly increasing per device (load.common.js): beyond 1,000 frames/s a device's run ahead of time.
    check: (o) => {
      const top = Math.max(...(o.steps ?? [16_000]));
      return top / o.devices > 1000
        ? `knee: ${top} frames/s over ${o.devices} devices is more than 1000 frames/s per device (frame timestamps are whole ms): use more --devices`
        : null;
    } },
  { name: 'flood', description: 'noisy neighbour: N devices\' QoS 1 publish→PUBACK p99 while one device floods QoS 0 arrays of 100 frames, beside the same load without it (target p99 < 250 ms, on PostgreSQL)',
    load: async () => (await import('./flood.bench.js')).floodScenario },
  { name: 'start', description: 'drivewire serve on a new data directory, then restarted: seconds to /health, RSS while idle (--duration s); ratio to PGlite + PostGIS alone',
    load: async () => (await import('./start.bench.js')).startScenario },
  { name: 'late-trip', description: 'a late frame into a long completed trip (--trip-messages) beside a current frame, --duration rounds of each: PUBACK ms, /health ms meanwhile',
    load: async () => (await import('./late-trip.bench.js')).lateTripScenario,
    smoke: { tripMessages: 20_000, durationS: 2 } },
  { name: 'export', description: "a CSV export of one device's --export-messages messages (made in SQL) over HTTP: the API's RSS before, at its peak and after (goal: a rise of at most 50 MB), and the time",
    load: async () => (await import('./export.bench.js')).exportScenario,
    smoke: { exportMessages: 20_000 } },
  { name: 'history', description: 'ingest, GET …/messages and …/trips, bytes per message and dropping a day, on an empty database and then after preloading --messages (default 20,000,000) of history (PostgreSQL only)',
    load: async () => (await import('./history.bench.js')).historyScenario,
    defaultDevices: 200, defaultWindow: 10, needsPostgres: true,
    smoke: { messages: 40_000 },
    check: (o) => (o.devices > 999 ? `history: --devices must be at most 999 (the load's devices are among the history's 1000), got ${o.devices}` : null) },
  // Commands to devices, end to end.
  { name: 'commands', description: 'N devices (default 1000) answering at once, one ping each POSTed through the API, 64 in flight: POST → delivered at the device and → succeeded p50/p99/max, commands/s, every command succeeded; ratio to bare Aedes',
    load: async () => (await import('./commands.bench.js')).commandsScenario,
    defaultDevices: 1000, smoke: { devices: 20 } },
  // Issue 11: the ingest scenario with the trips stage off then on, on fresh platforms, and their ratio.
  { name: 'trips', description: 'the ingest scenario with trips off then on (--trips compare): the cost of the trips stage',
    notInSmoke: true,
    load: async () => {
      const { ingestScenario } = await import('./ingest.bench.js');
      return { ...ingestScenario, name: 'trips', run: (o) => ingestScenario.run({ ...o, trips: 'compare' }) };
    } },
];
