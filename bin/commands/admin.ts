import type { Command } from 'commander';
import { CliError, createClient, output, table } from '../client.js';
import type { AdminDeviceView, ApplicationView, TokenView } from '../api-types.js';
import { withClientOptions } from './common.js';
import { registerCommandCommands } from './commands.js';

/** `drivewire apps ...` and `drivewire devices ...`: administration through the admin API. */
export function registerAdminCommands(program: Command): void {
  const apps = program.command('apps').description('applications');
  withClientOptions(apps.command('create').description('create an application'))
    .requiredOption('--name <name>', 'application name')
    .option('--kind <kind>', 'enterprise or consumer', 'enterprise')
    .action(async (o) => {
      if (!['enterprise', 'consumer'].includes(o.kind)) throw new CliError(`--kind must be enterprise or consumer, got "${o.kind}"`);
      const { application } = await createClient(o).admin<{ application: ApplicationView }>('POST', '/admin/v1/applications', { application: { name: o.name, kind: o.kind } });
      output(o.json, application, () =>
        `Created ${application.kind} application "${application.name}"\n  id:     ${application.id}\n  secret: ${application.secret}  (shown once)`);
    });
  withClientOptions(apps.command('list').description('list applications')).action(async (o) => {
    const { applications } = await createClient(o).admin<{ applications: ApplicationView[] }>('GET', '/admin/v1/applications');
    output(o.json, applications, () => table(applications, ['id', 'name', 'kind', 'createdAt']));
  });
  withClientOptions(apps.command('token').description('issue a Bearer token for an application'))
    .argument('<app>', 'application id ("default" = the default application)')
    .option('--ttl <seconds>', 'lifetime in seconds')
    .action(async (appId, o) => {
      const body = { token: o.ttl ? { ttlSeconds: Number(o.ttl) } : {} };
      const { token } = await createClient(o).admin<{ token: TokenView }>('POST', `/admin/v1/applications/${appId}/tokens`, body);
      output(o.json, token, () => `Bearer ${token.accessToken}${token.expiresAt ? ` (expires ${token.expiresAt})` : ''}`);
    });

  const devices = program.command('devices').description('devices');
  withClientOptions(devices.command('provision').description('provision a device; prints its MQTT secret once'))
    .requiredOption('--name <name>', 'device name')
    .option('--chip-id <chipId>', 'hardware chip id')
    .option('--owner <ownerId>', 'owner id (default: a new owner)')
    .option('--authorize <app>', 'also authorize this application id for it ("default" = the default application)')
    .action(async (o) => {
      const client = createClient(o);
      const { device } = await client.admin<{ device: AdminDeviceView }>('POST', '/admin/v1/devices', { device: { name: o.name, chipId: o.chipId, ownerId: o.owner } });
      if (o.authorize) await authorize(client, device.id, o.authorize, true);
      output(o.json, device, () => [
        `Provisioned device "${device.name}"`, `  id (MQTT username): ${device.id}`, `  secret (MQTT password): ${device.secret}  (shown once)`,
        `  chipId: ${device.chipId}  caseId: ${device.caseId}`,
      ].join('\n'));
    });
  withClientOptions(devices.command('authorize').description("record the owner's authorization of an application for a device"))
    .argument('<device>', 'device id')
    .requiredOption('--app <app>', 'application id ("default" = the default application)')
    .option('--no-register', 'do not also register it with an Enterprise application')
    .action(async (deviceId, o) => {
      const result = await authorize(createClient(o), deviceId, o.app, o.register);
      output(o.json, result, () => `Authorized application ${result.applicationId} for device ${deviceId}${result.registered ? ' (and registered it)' : ''}`);
    });
  withClientOptions(devices.command('list').description('list all provisioned devices')).action(async (o) => {
    const { devices: list } = await createClient(o).admin<{ devices: AdminDeviceView[] }>('GET', '/admin/v1/devices');
    output(o.json, list, () => table(list, ['id', 'name', 'chipId', 'caseId', 'createdAt']));
  });
  registerCommandCommands(devices);
}

async function authorize(client: ReturnType<typeof createClient>, deviceId: string, app: string, register: boolean) {
  const applicationId = app === 'default' ? client.credentials?.application?.id : app;
  if (!applicationId) throw new CliError('No default application in credentials.json; pass --app <id>');
  await client.admin('POST', `/admin/v1/devices/${deviceId}/authorizations`, { authorization: { applicationId } });
  const { applications } = await client.admin<{ applications: ApplicationView[] }>('GET', '/admin/v1/applications');
  const kind = applications.find((a) => a.id === applicationId)?.kind;
  const registered = register && kind === 'enterprise';
  if (registered) await client.admin('POST', `/admin/v1/devices/${deviceId}/registrations`, { authorization: { applicationId } });
  return { deviceId, applicationId, registered };
}
