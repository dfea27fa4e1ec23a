// The contract between `drivewire bench` and its scenarios.
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
  /** Rules per device (rules scenario). */
  rules: number;
  /** Also measure the bare baselines (bare Aedes, raw COPY) in the same run; default true. */
  baselines?: boolean;
}

export interface BenchScenario {
  name: string;
  description: string;
  /** Runs on a fresh platform and returns the figures, printed as JSON. */
  run(o: BenchOptions): Promise<Record<string, unknown>>;
}
