import type { Command } from 'commander';
import { SETTINGS } from '../../lib/config.js';
import { CliError } from '../client.js';
import { BENCH_SCENARIOS, type BenchOptions } from '../../bench/scenarios.js';
import { saveResult } from '../../bench/results.js';

function count(name: string, text: string, min: number): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min) throw new CliError(`--${name} must be an integer of at least ${min}, got "${text}"`);
  return n;
}

/** `--smoke` (CI): every scenario small and short; only loss, duplicates and errors fail it. */
const SMOKE: Partial<BenchOptions> = { devices: 5, durationS: 3, warmupS: 1, rules: 2, baselines: false, ingestRate: 100, smoke: true };
/** Devices when --devices is not given and the scenario has no default of its own. */
const DEVICES = 50;
/** Publishes in flight per device when --window is not given and the scenario has no default of its own. */
const WINDOW = 4;
const STEPS = '1000,2000,4000,8000,12000,16000';

function tripsMode(text: string): 'on' | 'off' | 'compare' {
  if (text === 'on' || text === 'off' || text === 'compare') return text;
  throw new CliError(`--trips must be on, off or compare, got "${text}"`);
}

function qosLevel(text: string): 0 | 1 {
  if (text === '0' || text === '1') return Number(text) as 0 | 1;
  throw new CliError(`--qos must be 0 or 1, got "${text}"`);
}

/** `--steps 1000,2000,4000`: offered total frames/s, each a positive integer, increasing. */
function stepList(text: string): number[] {
  const steps = text.split(',').map((s) => s.trim());
  const rates = steps.map(Number);
  if (!steps.length || rates.some((r, i) => !steps[i] || !Number.isInteger(r) || r < 1)) {
    throw new CliError(`--steps must be frames/s as positive integers separated by commas (e.g. ${STEPS}), got "${text}"`);
  }
  if (rates.some((r, i) => i > 0 && r <= rates[i - 1])) throw new CliError(`--steps must increase, got "${text}"`);
  return rates;
}

/** `drivewire bench [scenario]`: starts a fresh platform, drives it, prints the figures as JSON. */
export function registerBenchCommands(program: Command): void {
  program.command('bench')
    .description(`run a benchmark scenario and print its figures as JSON (${BENCH_SCENARIOS.map((s) => s.name).join(', ')}); `
      + 'each result is also saved as bench/results/<scenario>.json (the latest) and appended to <scenario>.jsonl (the history)')
    .argument('[scenario]', 'scenario name; without one, every scenario runs in turn')
    .option('--devices <n>', `simulated devices (default: ${DEVICES}; connections scenario: 10000, commands scenario: 1000)`)
    .option('--duration <s>', 'seconds measured', '20')
    .option('--warmup <s>', 'seconds of load before measuring', '3')
    .option('--window <n>', `QoS 1 publishes in flight per device (default: ${WINDOW}; history scenario: 10)`)
    .option('--rate <n>', 'frames per second per device (0 = as fast as acknowledgements allow; default: 0, rules scenario 2)')
    .option('--batch-size <n>', `ingest batch size in frames (default: ${SETTINGS.ingestBatchSize.env}, else ${SETTINGS.ingestBatchSize.def})`)
    .option('--batch-ms <ms>', `ingest batch window in ms (default: ${SETTINGS.ingestBatchMs.env}, else ${SETTINGS.ingestBatchMs.def})`)
    .option('--rules <m>', 'rules per device (rules scenario)', '5')
    .option('--rule-options', 'rules scenario: rules with dwell, deadband, a corridor and crossings between fixes')
    .option('--ingest-rate <n>', 'api scenario: total frames/s the devices publish while the API is measured (0 = idle)', '0')
    .option('--api-rate <n>', 'api scenario: requests/s offered in all, to read the latency at that load (0 = as fast as answered)', '0')
    .option('--api-process', 'api and commands scenarios: serve the API from a process of its own (serve --only api; PostgreSQL only)')
    .option('--trips <mode>', 'ingest scenario: trips stage on, off, or compare (both, same run, with their ratio)', 'on')
    .option('--qos <0|1>', 'knee scenario: QoS of the open-loop frames', '1')
    .option('--steps <list>', 'knee scenario: offered total frames/s of each step, comma-separated, increasing', STEPS)
    .option('--step-seconds <s>', 'knee scenario: seconds each step lasts', '5')
    .option('--parallel <n>', 'connections scenario: connection attempts in flight at once', '250')
    .option('--trip-messages <n>', 'late-trip scenario: messages of the long completed trip', '231500')
    .option('--export-messages <n>', 'export scenario: messages of the device exported', '1000000')
    .option('--messages <n>', 'history scenario: messages of history preloaded over 1000 devices and 30 days (at least 20000: the API\'s device has 20000)', '20000000')
    .option('--no-baselines', 'skip the bare baselines (bare Aedes, raw COPY, the storing floor) measured after the scenario')
    .option('--no-save', 'do not save the results in bench/results/')
    .option('--smoke', 'every scenario, small and short, without baselines and not saved; exits 1 on lost or duplicated frames or errors (never on a timing)')
    .option('--database-url <url>', 'PostgreSQL + PostGIS to use (default: DATABASE_URL, else embedded PGlite in a temporary directory)')
    .action(async (name: string | undefined, o) => {
      const named = name ? BENCH_SCENARIOS.filter((s) => s.name === name) : BENCH_SCENARIOS.filter((s) => !(o.smoke && s.notInSmoke));
      if (!named.length) throw new CliError(`unknown scenario "${name}"; choose one of ${BENCH_SCENARIOS.map((s) => s.name).join(', ')}`);
      const databaseUrl: string | null = o.databaseUrl ?? process.env.DATABASE_URL ?? null;
      if (name && named[0].needsPostgres && !databaseUrl) {
        throw new CliError(`the ${name} scenario runs on PostgreSQL only, not on the embedded database: give --database-url (or DATABASE_URL)`);
      }
      // Every scenario in turn on the embedded database: those for PostgreSQL only are left out, and said so.
      const chosen = named.filter((s) => databaseUrl || !s.needsPostgres);
      for (const s of named) if (!chosen.includes(s)) process.stderr.write(`bench ${s.name}: left out (PostgreSQL only; give --database-url)\n`);
      const devices = o.devices === undefined ? undefined : count('devices', o.devices, 1);
      const window = o.window === undefined ? undefined : count('window', o.window, 1);
      const options: Omit<BenchOptions, 'devices' | 'window'> = {
        durationS: count('duration', o.duration, 1), warmupS: count('warmup', o.warmup, 0),
        rate: o.rate === undefined ? undefined : count('rate', o.rate, 0), databaseUrl,
        batchSize: o.batchSize === undefined ? undefined : count('batch-size', o.batchSize, 1),
        batchMs: o.batchMs === undefined ? undefined : count('batch-ms', o.batchMs, 0),
        rules: count('rules', o.rules, 1),
        ruleOptions: Boolean(o.ruleOptions),
        ingestRate: count('ingest-rate', o.ingestRate, 0),
        apiRate: count('api-rate', o.apiRate, 0),
        apiProcess: o.apiProcess === true,
        baselines: o.baselines !== false,
        trips: tripsMode(o.trips),
        qos: qosLevel(o.qos),
        steps: stepList(o.steps),
        stepSeconds: count('step-seconds', o.stepSeconds, 1),
        parallel: count('parallel', o.parallel, 1),
        tripMessages: count('trip-messages', o.tripMessages, 3),
        exportMessages: count('export-messages', o.exportMessages, 1),
        messages: count('messages', o.messages, 20_000),
      };
      // Each scenario's options: what the command line gives, else the scenario's devices; --smoke over both.
      const runs = chosen.map((entry) => {
        const scenarioOptions: BenchOptions = {
          ...options, devices: devices ?? entry.defaultDevices ?? DEVICES, window: window ?? entry.defaultWindow ?? WINDOW,
        };
        if (o.smoke) Object.assign(scenarioOptions, SMOKE, entry.smoke);
        const problem = entry.check?.(scenarioOptions);
        if (problem) throw new CliError(problem);
        return { entry, options: scenarioOptions };
      });
      const save = o.save !== false && !o.smoke;
      const problems: string[] = [];
      for (const { entry, options: scenarioOptions } of runs) {
        process.stderr.write(`bench ${entry.name}: ${entry.description}\n`);
        const scenario = await entry.load();
        const result = await scenario.run(scenarioOptions);
        process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
        if (save) {
          // the rules scenario with --rule-options is a record of its own, beside the plain one
          const name = entry.name === 'rules' && scenarioOptions.ruleOptions ? 'rules-options' : entry.name;
          const { latest, history } = saveResult(name, result);
          process.stderr.write(`bench ${name}: saved as ${latest}, appended to ${history}\n`);
        }
        problems.push(...(scenario.problems?.(result) ?? []));
      }
      for (const p of problems) process.stderr.write(`bench: ${p}\n`);
      process.exit(problems.length ? 1 : 0);
    });
}
