import type { Command } from 'commander';
import { CliError, createClient, output, type Client } from '../client.js';
import { runLoad } from '../../simulator/load.js';
import { loadStoredRoutes } from '../../simulator/route.js';
import type { AdminDeviceView } from '../api-types.js';
import { withClientOptions } from './common.js';
import { pick } from './routes.js';

const PROVISION_CONCURRENCY = 8;

function bounded(raw: string, flag: string, min: number, max: number, integer = false): number {
  const n = Number(raw);
  if (!Number.isFinite(n) || n < min || n > max || (integer && !Number.isInteger(n))) {
    throw new CliError(`${flag} must be ${integer ? 'an integer' : 'a number'} from ${min} to ${max}, got "${raw}"`);
  }
  return n;
}

/** Provisions `count` devices through the admin API, authorized for (and registered with) the default application. */
async function provision(client: Client, count: number): Promise<{ id: string; secret: string }[]> {
  const app = client.credentials?.application;
  if (!app) throw new CliError('No default application in credentials.json: start the platform with drivewire serve first');
  const stamp = new Date().toISOString();
  const out: { id: string; secret: string }[] = [];
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const i = next++;
      const { device } = await client.admin<{ device: AdminDeviceView }>('POST', '/admin/v1/devices', { device: { name: `simulate ${stamp} #${i + 1}` } });
      await client.admin('POST', `/admin/v1/devices/${device.id}/authorizations`, { authorization: { applicationId: app.id } });
      if (app.kind === 'enterprise') await client.admin('POST', `/admin/v1/devices/${device.id}/registrations`, { authorization: { applicationId: app.id } });
      out.push({ id: device.id, secret: device.secret! }); // shown on provisioning
    }
  };
  await Promise.all(Array.from({ length: Math.min(PROVISION_CONCURRENCY, count) }, worker));
  return out;
}

/** `drivewire simulate`: a load test with many devices provisioned for the purpose. */
export function registerSimulateCommand(program: Command): void {
  withClientOptions(program.command('simulate').description('load test: provision N devices and publish frames from all of them at once'))
    .requiredOption('--devices <n>', 'number of devices (provisioned now, authorized for the default application)')
    .requiredOption('--rate <hz>', 'frames per second per device')
    .requiredOption('--duration <s>', 'seconds to publish')
    .option('--mqtt-url <url>', 'MQTT URL (default: from credentials.json)')
    .option('--route <route>', 'stored route the frames follow', 'DFW - Downtown Route 1')
    .action(async (o) => {
      const devices = bounded(o.devices, '--devices', 1, 10_000, true);
      const rateHz = bounded(o.rate, '--rate', 0.01, 1000);
      const durationMs = bounded(o.duration, '--duration', 0.1, 86_400) * 1000;
      const client = createClient(o);
      const mqttUrl = o.mqttUrl ?? client.credentials?.mqttUrl;
      if (!mqttUrl) throw new CliError('No MQTT URL: pass --mqtt-url or start the platform with its gateway (credentials.json names it)');
      const route = pick(await loadStoredRoutes(), o.route, 'route', "one of routes-data/ (see 'drivewire routes list')");
      const result = await runLoad({ mqttUrl, devices: await provision(client, devices), route, rateHz, durationMs });
      if (!result.connected) throw new CliError(`No device could connect to ${mqttUrl}: ${result.firstConnectError}`);
      output(o.json, result, () => [
        `${result.connected}/${result.devices} devices connected to ${mqttUrl}${result.connectFailures ? ` (${result.firstConnectError})` : ''}`,
        `frames sent: ${result.sent}, acknowledged: ${result.acknowledged}, failed: ${result.failed}`,
        `throughput: ${(result.acknowledged / Math.max(1, result.elapsedMs) * 1000).toFixed(0)} frames/s; `
          + `ack latency p50 ${result.latencyP50 ?? '-'} ms, p99 ${result.latencyP99 ?? '-'} ms`,
      ].join('\n'));
    });
}
