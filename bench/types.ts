// The contract between `drivewire bench` and its scenarios.
/** What `drivewire bench` passes to every scenario (flags of bin/commands/bench.ts). */
export interface BenchOptions {
  devices: number;
  /** Seconds measured, after warmupS seconds not measured. */
  durationS: number;
  warmupS: number;
  /** QoS 1 publishes in flight per device. */
  window: number;
  /** Frames per second per device; 0 = closed loop (as fast as acknowledgements allow); undefined = the scenario's default. */
  rate?: number;
  databaseUrl: string | null;
  batchSize?: number;
  batchMs?: number;
  /** Rules per device (rules scenario). */
  rules: number;
  /** Rules scenario: rules with dwell, deadband, a corridor and crossings (bench/rules.bench.ts rulesFor). */
  ruleOptions?: boolean;
  /** Total frames/s published by `devices` devices during the api scenario; 0 = the API idle. */
  ingestRate?: number;
  /** api scenario: requests a second offered in all (the platform and the bare route alike); 0 or absent = as fast as answered. */
  apiRate?: number;
  /** api scenario: the API in a process of its own (`serve --only api`, PostgreSQL only). */
  apiProcess?: boolean;
  /** Also measure the bare baselines (bare Aedes, raw COPY, the storing floor) in the same run; default true. */
  baselines?: boolean;
  /** Trips stage on, off, or both one after the other with their ratio (ingest scenario); default on. */
  trips?: 'on' | 'off' | 'compare';
  /** QoS of the knee scenario's frames; default 1. */
  qos?: 0 | 1;
  /** Total offered frames/s of each knee step, in order. */
  steps?: number[];
  /** Seconds each knee step lasts. */
  stepSeconds?: number;
  /** Connection attempts in flight at once (connections scenario). */
  parallel?: number;
  /** Messages of the long completed trip the late-trip scenario's late frames go into. */
  tripMessages?: number;
  /** Messages of the device the export scenario exports. */
  exportMessages?: number;
  /** Messages the history scenario preloads (over 1,000 devices and 30 days). */
  messages?: number;
  /** `--smoke`: a scenario may shorten what the shared smoke options do not cover (drain waits). */
  smoke?: boolean;
}

/** A scenario; `R`, the figures its run returns, is what its problems() reads. */
export interface BenchScenario<R extends object = Record<string, unknown>> {
  name: string;
  description: string;
  /** Runs on a fresh platform and returns the figures, printed as JSON. */
  run(o: BenchOptions): Promise<R>;
  /** What went wrong in a run: lost or duplicated frames, errors (never a timing); empty when none. */
  problems?(result: R): string[];
}

/** A scenario with its figures' type taken from its run, so that its problems() reads them typed. */
export const benchScenario = <R extends object>(s: BenchScenario<R>): BenchScenario<R> => s;
