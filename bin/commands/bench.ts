import type { Command } from 'commander';
import { CliError } from '../client.js';
import { BENCH_SCENARIOS, type BenchOptions } from '../../bench/scenarios.js';

function count(name: string, text: string, min: number): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min) throw new CliError(`--${name} must be an integer of at least ${min}, got "${text}"`);
  return n;
}

/** `--smoke` (CI): every scenario small and short; only loss, duplicates and errors fail it. */
const SMOKE: Partial<BenchOptions> = { devices: 5, durationS: 3, warmupS: 1, rules: 2, baselines: false, ingestRate: 100 };
function tripsMode(text: string): 'on' | 'off' | 'compare' {
  if (text === 'on' || text === 'off' || text === 'compare') return text;
  throw new CliError(`--trips must be on, off or compare, got "${text}"`);
}

/** `drivewire bench [scenario]`: starts a fresh platform, drives it, prints the figures as JSON. */
export function registerBenchCommands(program: Command): void {
  program.command('bench')
    .description(`run a benchmark scenario and print its figures as JSON (${BENCH_SCENARIOS.map((s) => s.name).join(', ')})`)
    .argument('[scenario]', 'scenario name; without one, every scenario runs in turn')
    .option('--devices <n>', 'simulated devices', '50')
    .option('--duration <s>', 'seconds measured', '20')
    .option('--warmup <s>', 'seconds of load before measuring', '3')
    .option('--window <n>', 'QoS 1 publishes in flight per device', '4')
    .option('--rate <n>', 'frames per second per device (0 = as fast as acknowledgements allow; default: 0, rules scenario 2)')
    .option('--batch-size <n>', 'ingest batch size in frames (default: the configuration\'s)')
    .option('--batch-ms <ms>', 'ingest batch window in ms (default: the configuration\'s)')
    .option('--rules <m>', 'rules per device (rules scenario)', '5')
    .option('--ingest-rate <n>', 'api scenario: total frames/s the devices publish while the API is measured (0 = idle)', '0')
    .option('--trips <mode>', 'ingest scenario: trips stage on, off, or compare (both, same run, with their ratio)', 'on')
    .option('--no-baselines', 'skip the bare baselines (bare Aedes, raw COPY) measured after the scenario')
    .option('--smoke', 'every scenario, small and short, without baselines; exits 1 on lost or duplicated frames or errors (never on a timing)')
    .option('--database-url <url>', 'PostgreSQL + PostGIS to use (default: embedded PGlite in a temporary directory)')
    .action(async (name: string | undefined, o) => {
      const chosen = name ? BENCH_SCENARIOS.filter((s) => s.name === name) : BENCH_SCENARIOS;
      if (!chosen.length) throw new CliError(`unknown scenario "${name}"; choose one of ${BENCH_SCENARIOS.map((s) => s.name).join(', ')}`);
      const options: BenchOptions = {
        devices: count('devices', o.devices, 1), durationS: count('duration', o.duration, 1), warmupS: count('warmup', o.warmup, 0),
        window: count('window', o.window, 1), rate: o.rate === undefined ? undefined : count('rate', o.rate, 0), databaseUrl: o.databaseUrl ?? process.env.DATABASE_URL ?? null,
        batchSize: o.batchSize === undefined ? undefined : count('batch-size', o.batchSize, 1),
        batchMs: o.batchMs === undefined ? undefined : count('batch-ms', o.batchMs, 0),
        rules: count('rules', o.rules, 1),
        ingestRate: count('ingest-rate', o.ingestRate, 0),
        baselines: o.baselines !== false,
        trips: tripsMode(o.trips),
      };
      if (o.smoke) Object.assign(options, SMOKE);
      const problems: string[] = [];
      for (const entry of chosen) {
        process.stderr.write(`bench ${entry.name}: ${entry.description}\n`);
        const scenario = await entry.load();
        const result = await scenario.run(options);
        process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
        problems.push(...(scenario.problems?.(result) ?? []));
      }
      for (const p of problems) process.stderr.write(`bench: ${p}\n`);
      process.exit(problems.length ? 1 : 0);
    });
}
