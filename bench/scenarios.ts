import { ingestScenario } from './ingest.bench.js';

/** What `drivewire bench` passes to every scenario (flags of bin/commands/bench.ts). */
export interface BenchOptions {
  devices: number;
  /** Seconds measured, after warmupS seconds not measured. */
  durationS: number;
  warmupS: number;
  /** QoS 1 publishes in flight per device. */
  window: number;
  /** Frames per second per device; 0 = as fast as acknowledgements allow. */
  rate: number;
  databaseUrl: string | null;
  batchSize?: number;
  batchMs?: number;
}

export interface BenchScenario {
  name: string;
  description: string;
  /** Runs on a fresh platform and returns the figures, printed as JSON. */
  run(o: BenchOptions): Promise<Record<string, unknown>>;
}

/** The scenarios, in one explicit list (issue 5 adds rules → webhooks). */
export const BENCH_SCENARIOS: BenchScenario[] = [
  ingestScenario,
];
