import type { Command } from 'commander';
import { CliError, createClient, output, type Client } from '../client.js';
import type { CommandView, DummyView } from '../api-types.js';
import { COMMAND_TYPE_NAMES, FINAL_STATES } from '../../lib/commands.js';
import { isUuid } from '../../lib/uuid.js';
import { withClientOptions } from './common.js';
import { listAll, pick } from './routes.js';

/** ms between two reads of a command's state while waiting. */
const POLL_MS = 200;

/** A device id, or the device of a dummy given by name or id. */
export async function deviceOf(client: Client, ref: string): Promise<string> {
  const dummies = await listAll<DummyView>(client, '/api/v1/dummies', 'dummies');
  const dummy = dummies.find((d) => d.id === ref || d.name === ref) ?? (isUuid(ref) ? undefined : pick(dummies, ref, 'dummy', "give a device id, or see 'drivewire dummies list'"));
  return dummy?.deviceId ?? ref;
}

function parsePayload(text: string | undefined): unknown {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new CliError(`--payload must be JSON: ${(err as Error).message}`);
  }
}

/** One line a state: when the command reached it, and for a final one what the device answered. */
function stateLine(c: CommandView): string {
  const at = { queued: c.createdAt, sent: c.sentAt, delivered: c.deliveredAt, succeeded: c.respondedAt, failed: c.respondedAt }[c.state] ?? null;
  const answer = c.response ? (c.response.ok ? ` ${JSON.stringify(c.response.result ?? {})}` : ` ${c.response.error ?? ''}`) : '';
  return `${(at ?? new Date().toISOString()).slice(11, 23)}  ${c.state}${answer}`;
}

/** `drivewire devices command <device> <type>`: sends a command; with --wait prints each state until the last. */
export function registerCommandCommands(devices: Command): void {
  withClientOptions(devices.command('command').description('send a command to a device (docs/concepts/commands-and-presence.md)'))
    .argument('<device>', 'device id, or a dummy\'s name or id')
    .argument('<type>', `command type: ${COMMAND_TYPE_NAMES.join(', ')}`)
    .option('--payload <json>', 'the type\'s payload as JSON, e.g. \'{"seconds":5}\' for set-interval')
    .option('--expires-in <seconds>', 'seconds within which the device must answer (default: the platform\'s, 300)')
    .option('--wait', 'print each state change until the command ends; exit 1 unless it succeeded')
    .action(async (ref: string, type: string, o) => {
      const client = createClient(o);
      const deviceId = await deviceOf(client, ref);
      const expiresIn = o.expiresIn === undefined ? undefined : Number(o.expiresIn);
      if (expiresIn !== undefined && !Number.isInteger(expiresIn)) throw new CliError(`--expires-in must be a whole number of seconds, got "${o.expiresIn}"`);
      const body = { command: { type, ...(o.payload !== undefined && { payload: parsePayload(o.payload) }), ...(expiresIn !== undefined && { expiresIn }) } };
      let { command } = await client.api<{ command: CommandView }>('POST', `/api/v1/devices/${deviceId}/commands`, body);
      if (!o.wait) {
        output(o.json, command, () => `Command ${command.id} (${command.type}) ${command.state}; expires ${command.expiresAt}`);
        return;
      }
      if (!o.json) process.stdout.write(`Command ${command.id} (${command.type}) to ${deviceId}\n${stateLine(command)}\n`);
      while (!(FINAL_STATES as readonly string[]).includes(command.state)) {
        await new Promise((r) => setTimeout(r, POLL_MS));
        const next = (await client.api<{ command: CommandView }>('GET', `/api/v1/commands/${command.id}`)).command;
        if (next.state === command.state) continue;
        // a state passed between two reads is printed too, from its time
        if (!o.json) {
          const order = ['queued', 'sent', 'delivered'];
          for (const s of order.slice(order.indexOf(command.state) + 1, order.includes(next.state) ? order.indexOf(next.state) : order.length)) {
            if (s === 'delivered' && !next.deliveredAt) continue;
            if (s === 'sent' && !next.sentAt) continue;
            process.stdout.write(`${stateLine({ ...next, state: s })}\n`);
          }
          process.stdout.write(`${stateLine(next)}\n`);
        }
        command = next;
      }
      if (o.json) output(true, command, () => '');
      if (command.state !== 'succeeded') throw new CliError(`Command ${command.id} ${command.state}`);
    });
}
