import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { CliError, output } from '../client.js';
import { startDevice } from '../../simulator/device.js';
import { loadStoredRoutes, storedRouteProblems, type StoredRoute } from '../../simulator/route.js';
import { parseRouteFile, routeFromCoordinates } from '../../simulator/route-import.js';
import { randomVin, speedProblem, vinProblem } from '../../simulator/runs.js';
import { parseScenarios, SCENARIOS, type Scenario } from '../../simulator/scenarios.js';
import { pick } from './routes.js';
import { createProgressView } from './run-progress.js';

/** A route file (a stored-route JSON, GeoJSON, GPX or polyline), else a route of routes-data/ by id or name. */
async function loadRoute(ref: string): Promise<StoredRoute> {
  if (fs.existsSync(ref) && fs.statSync(ref).isFile()) {
    const text = fs.readFileSync(ref, 'utf8');
    const fileName = path.basename(ref);
    try {
      const data = JSON.parse(text);
      if (data && typeof data === 'object' && 'polyline' in data && 'duration' in data) {
        const problems = storedRouteProblems(data);
        if (problems.length) throw new CliError(`${fileName}: ${problems.join('; ')}`);
        return data as StoredRoute;
      }
    } catch (err) {
      if (err instanceof CliError) throw err;
    }
    try {
      const parsed = parseRouteFile(text, fileName);
      return routeFromCoordinates(parsed.coordinates, { name: parsed.name ?? fileName.replace(/\.[^.]+$/, ''), description: parsed.description });
    } catch (err) {
      throw new CliError((err as Error).message);
    }
  }
  const stored = await loadStoredRoutes();
  return pick(stored, ref, 'route', `give a route file or one of: ${stored.map((r) => r.name).join(', ')}`);
}

/** `drive`'s options, as commander gives them. */
interface DriveOptions { speed?: string; vin?: string; connectTimeout: string; scenario?: string[] }

function options(o: DriveOptions) {
  const speed = o.speed === undefined ? 1 : Number(o.speed);
  const vin = o.vin ?? randomVin();
  const connectTimeout = Number(o.connectTimeout);
  const problem = speedProblem(speed) ?? vinProblem(vin) ?? (connectTimeout > 0 ? undefined : `--connect-timeout must be seconds > 0, got "${o.connectTimeout}"`);
  if (problem) throw new CliError(problem);
  let scenarios: Scenario[];
  try {
    scenarios = parseScenarios(o.scenario ?? []);
  } catch (err) {
    throw new CliError((err as Error).message);
  }
  return { speed, vin, scenarios, connectTimeoutMs: connectTimeout * 1000 };
}

/** `drivewire drive`: one device alone against any MQTT gateway, no API; it answers commands as a dummy does. */
export function registerDriveCommand(program: Command): void {
  program.command('drive').description('drive one device along a route over MQTT, with no API (for testing a gateway or broker)')
    .requiredOption('--mqtt-url <url>', 'MQTT URL, e.g. mqtt://localhost:1883')
    .requiredOption('--device-id <id>', 'device id (MQTT username and client id)')
    .requiredOption('--secret <secret>', 'device secret (MQTT password)')
    .requiredOption('--route <route>', 'a stored route (name or id) or a route file (GeoJSON, GPX, polyline, stored-route JSON)')
    .option('--speed <n>', 'playback speed: 1 real time (default) to 1000')
    .option('--vin <vin>', '17 characters starting with VV (default: a random one)')
    .option('--scenario <name>', `${SCENARIOS.join(', ')} (repeatable or comma-separated)`, (v: string, prev: string[] = []) => [...prev, ...v.split(',')])
    .option('--connect-timeout <s>', 'seconds to wait for the MQTT connection', '15')
    .option('--json', 'print the summary as JSON')
    .action(async (o) => {
      const opts = options(o);
      const route = await loadRoute(o.route);
      const view = createProgressView();
      let handle: ReturnType<typeof startDevice>;
      try {
        handle = startDevice({
          mqttUrl: o.mqttUrl, deviceId: o.deviceId, secret: o.secret, route, ...opts,
          onProgress: (p) => view.update({ state: 'running', ...p, distanceTotal: route.distanceByGPS }),
        });
      } catch (err) {
        throw new CliError((err as Error).message);
      }
      const stop = () => { void handle.stop(); };
      process.once('SIGINT', stop);
      const summary = await handle.done.catch((err: Error) => { throw new CliError(`${o.mqttUrl}: ${err.message}`); }).finally(() => {
        view.stop();
        process.off('SIGINT', stop);
      });
      output(o.json, { route: route.name, ...summary }, () => `${summary.stopped ? 'Stopped' : 'Done'}: ${summary.framesSent} frames sent, `
        + `${summary.distance.toFixed(1)} m, ${(summary.duration / 1000).toFixed(1)} s of driving on "${route.name}"`);
    });
}
