import type { Command } from 'commander';
import { CliError, createClient, output, table, type Client, type ClientOptions } from '../client.js';
import { randomVin, SCENARIOS } from '../../simulator/runs.js';
import type { DummyView, RouteView, RunView } from '../api-types.js';
import { withClientOptions } from './common.js';
import { listAll, pick, registerRouteCommands, resolveRoute } from './routes.js';
import { registerDriveCommand } from './drive.js';
import { registerSimulateCommand } from './simulate.js';
import { createProgressView } from './run-progress.js';
import { gradeOf, tripLine, tripOfRun } from './trips.js';

/** `runs start`'s options, as commander gives them. */
interface StartRunOptions extends ClientOptions {
  dummy: string; route: string; vin?: string; repeat?: boolean; speed?: string; scenario?: string[]; wait?: boolean;
}

const POLL_MS = 500;

async function resolveDummy(client: Client, ref: string): Promise<DummyView> {
  return pick(await listAll<DummyView>(client, '/api/v1/dummies', 'dummies'), ref, 'dummy', "see 'drivewire dummies list'");
}

const collect = (value: string, previous: string[] = []) => [...previous, ...value.split(',').map((s) => s.trim()).filter(Boolean)];

function numberOption(raw: string | undefined, flag: string): number | undefined {
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!Number.isFinite(n)) throw new CliError(`${flag} must be a number, got "${raw}"`);
  return n;
}

function describeRun(run: RunView, route?: RouteView): string {
  const s = run.status;
  return [
    `Run ${run.id}: ${s.state}${s.outcome ? ` (${s.outcome})` : ''}`,
    `  route:     ${route ? `${route.name} (${s.routeId})` : s.routeId}`,
    `  vin:       ${s.vin}   speed: x${s.speed}   repeat: ${s.repeat ? `yes (${s.repeatCount} done)` : 'no'}`,
    `  progress:  ${s.framesSent} frames, ${Math.round(s.distance)} m, last speed ${s.lastSpeed ?? '-'} km/h`,
    `  remaining: ${s.remainingMessages ?? '-'} frames, ${s.remainingSeconds ?? '-'} s`,
    ...(s.nextPassAt ? [`  next pass: in ${((Date.parse(s.nextPassAt) - Date.now()) / 1000).toFixed(1)} s${s.waitReason ? `: ${s.waitReason}` : ''}`] : []),
    ...(s.scenarios.length ? [`  scenarios: ${s.scenarios.join(', ')}`] : []),
    ...(s.error ? [`  error:     ${s.error}`] : []),
  ].join('\n');
}

/** Follows the run until it is no longer current; returns it as finished. */
async function waitForRun(client: Client, dummy: DummyView, run: RunView, route: RouteView): Promise<RunView> {
  const view = createProgressView();
  const base = `/api/v1/dummies/${dummy.id}/runs`;
  try {
    for (let current: RunView | null = run; current && current.id === run.id; current = (await client.api<{ run: RunView | null }>('GET', `${base}/_current`)).run) {
      const s = current.status;
      view.update({
        state: s.state, framesSent: s.framesSent, framesTotal: s.framesSent + (s.remainingMessages ?? 0),
        distance: s.distance, distanceTotal: Math.max(route.distanceByGPS, s.distance), remainingSeconds: s.remainingSeconds ?? 0,
      });
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
  } finally {
    view.stop();
  }
  return (await client.api<{ run: RunView }>('GET', `${base}/${run.id}`)).run;
}

function summary(run: RunView) {
  const s = run.status;
  const wallMs = s.startedAt && s.endedAt ? Date.parse(s.endedAt) - Date.parse(s.startedAt) : null;
  return { runId: run.id, outcome: s.outcome, framesSent: s.framesSent, distance: s.distance, duration: s.duration, wallClockMs: wallMs, error: s.error };
}

async function startRun(o: StartRunOptions): Promise<void> {
  if (o.wait && o.repeat) throw new CliError('--wait cannot be used with --repeat: a repeating run only ends when stopped');
  const client = createClient(o);
  const dummy = await resolveDummy(client, o.dummy);
  const route = await resolveRoute(client, o.route);
  const body = { run: { vin: o.vin ?? randomVin(), routeId: route.id, repeat: Boolean(o.repeat), speed: numberOption(o.speed, '--speed'), scenarios: o.scenario } };
  const { run } = await client.api<{ run: RunView }>('POST', `/api/v1/dummies/${dummy.id}/runs`, body);
  if (!o.wait) {
    output(o.json, run, () => `Run started: "${dummy.name}" on "${route.name}" (vin ${run.status.vin}, speed x${run.status.speed}, `
      + `${run.status.remainingSeconds?.toFixed(1) ?? '-'} s)\n  follow it with: drivewire runs status --dummy ${dummy.id}`);
    return;
  }
  const done = await waitForRun(client, dummy, run, route);
  const result = summary(done);
  if (done.status.outcome === 'failed') throw new CliError(`The run failed: ${done.status.error}`);
  // The run's trip: distance, duration, grade.
  const trip = await tripOfRun(client, dummy.deviceId, done.status.startedAt ?? new Date().toISOString(), done.status.duration);
  const card = trip ? await gradeOf(client, trip.id) : null;
  const tripResult = trip && { id: trip.id, status: trip.status, distance: trip.stats.distance, duration: trip.stats.duration, grade: card?.grade ?? null };
  output(o.json, { ...result, trip: tripResult }, () => `Run ${done.status.outcome}: ${result.framesSent} frames sent, ${result.distance.toFixed(1)} m, `
    + `${(result.duration / 1000).toFixed(1)} s of driving${result.wallClockMs === null ? '' : ` in ${(result.wallClockMs / 1000).toFixed(1)} s`}`
    + `\n${trip ? tripLine(trip, card) : 'No trip recorded for this run.'}`);
}

/** `drivewire dummies ...` and `drivewire runs ...`, through the REST API (docs/concepts/simulator.md). */
export function registerDummyCommands(program: Command): void {
  const dummies = program.command('dummies').description('simulated devices of the application');
  withClientOptions(dummies.command('create').description('create a dummy (a real device the application can read)'))
    .requiredOption('--name <name>', 'dummy name')
    .action(async (o) => {
      const { dummy } = await createClient(o).api<{ dummy: DummyView }>('POST', '/api/v1/dummies', { dummy: { name: o.name } });
      output(o.json, dummy, () => `Created dummy "${dummy.name}"\n  id:       ${dummy.id}\n  deviceId: ${dummy.deviceId}\n  caseId:   ${dummy.caseId}`);
    });
  withClientOptions(dummies.command('list').description('list the dummies')).action(async (o) => {
    const list = await listAll<DummyView>(createClient(o), '/api/v1/dummies', 'dummies');
    output(o.json, list, () => table(list as never, ['name', 'id', 'deviceId', 'caseId', 'createdAt']));
  });
  withClientOptions(dummies.command('delete').description('delete a dummy; its run stops and its device cannot be reclaimed'))
    .argument('<dummy>', 'dummy name or id')
    .action(async (ref: string, o) => {
      const client = createClient(o);
      const dummy = await resolveDummy(client, ref);
      await client.api('DELETE', `/api/v1/dummies/${dummy.id}`);
      output(o.json, { deleted: dummy.id }, () => `Deleted dummy "${dummy.name}" (${dummy.id})`);
    });

  const runs = program.command('runs').description('runs of dummies along routes');
  withClientOptions(runs.command('start').description('send a dummy along a route'))
    .requiredOption('--dummy <dummy>', 'dummy name or id')
    .requiredOption('--route <route>', 'route name or id')
    .option('--vin <vin>', '17 characters starting with VV (default: a random one)')
    .option('--repeat', 'restart after each completion until stopped')
    .option('--speed <n>', 'playback speed: 1 real time (default), N plays the drive in 1/N of its time')
    .option('--scenario <name>', `${SCENARIOS.join(', ')} (repeatable or comma-separated)`, collect)
    .option('--wait', 'follow the run with a progress bar and print a summary when it ends')
    .action(startRun);
  withClientOptions(runs.command('status').description("a dummy's current run"))
    .requiredOption('--dummy <dummy>', 'dummy name or id')
    .action(async (o) => {
      const client = createClient(o);
      const dummy = await resolveDummy(client, o.dummy);
      const { run } = await client.api<{ run: RunView | null }>('GET', `/api/v1/dummies/${dummy.id}/runs/_current`);
      const route = run ? (await client.api<{ route: RouteView }>('GET', `/api/v1/routes/${run.status.routeId}`)).route : undefined;
      output(o.json, run, () => (run ? describeRun(run, route) : `No current run for "${dummy.name}"`));
    });
  withClientOptions(runs.command('stop').description("stop a dummy's current run"))
    .requiredOption('--dummy <dummy>', 'dummy name or id')
    .action(async (o) => {
      const client = createClient(o);
      const dummy = await resolveDummy(client, o.dummy);
      // 202 with the stopping run, or 204 (no body) when there was none
      const answer = await client.api<{ run: RunView } | null>('DELETE', `/api/v1/dummies/${dummy.id}/runs/_current`);
      output(o.json, answer?.run ?? null, () => (answer ? `Stopping run ${answer.run.id} of "${dummy.name}"` : `No current run for "${dummy.name}"`));
    });
}

/** The simulator's command groups: routes, dummies, runs, drive, simulate. */
export function registerSimulatorCommands(program: Command): void {
  for (const register of [registerRouteCommands, registerDummyCommands, registerDriveCommand, registerSimulateCommand]) register(program);
}
