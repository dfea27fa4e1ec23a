import type { App } from '../../context.js';
import { Conflict, NotFound, ValidationError } from '../../../lib/errors.js';
import { COMMAND_STATES, COMMAND_TYPES, COMMAND_TYPE_NAMES, DEFAULT_EXPIRES_IN } from '../../../lib/commands.js';
import type { Command } from '../../../db/commands/commands.repository.js';
import { DeviceIdParams, errorResponses } from '../../schemas/common.js';
import { streamList, type Query } from '../../plugins/pagination.js';
import { presentCommand } from './commands.presenters.js';
import { CommandIdParams, CommandList, CommandListQuery, CommandResponse, CreateCommandBody } from './commands.schemas.js';

/** The stored type and payload of a command body; throws a 400 naming the field. */
export function checkCommand(input: { type: string; payload?: unknown }): { type: string; payload: Record<string, unknown> | null; concurrent: boolean } {
  const type = COMMAND_TYPES[input.type];
  if (!Object.hasOwn(COMMAND_TYPES, input.type) || !type) {
    throw new ValidationError(`command.type must be one of ${COMMAND_TYPE_NAMES.join(', ')}; got "${input.type.slice(0, 64)}"`);
  }
  return { type: input.type, payload: type.payload(input.payload), concurrent: type.concurrent ?? false };
}

function parseState(q: Query): string | undefined {
  const state = q.state?.trim() || undefined;
  if (state && !(COMMAND_STATES as readonly string[]).includes(state)) {
    throw new ValidationError(`state must be one of ${COMMAND_STATES.join(', ')}; got "${state.slice(0, 64)}"`);
  }
  return state;
}

/**
 * Commands to devices (docs/concepts/commands-and-presence.md): an application sends them to devices it can read,
 * and sees only its own. Logged under the platform service.
 */
export default async function commandsRoutes(app: App) {
  const { repos } = app.deps;
  const config = { service: 'platform' as const };
  const present = (c: Command) => presentCommand(app.links, c);

  app.post('/api/v1/devices/:deviceId/commands', {
    config,
    schema: {
      tags: ['commands'], summary: 'Send a command to a device: queued until the device is connected, then sent, delivered and answered',
      params: DeviceIdParams, body: CreateCommandBody, response: { 201: CommandResponse, ...errorResponses(404, 415) },
    },
  }, async (request, reply) => {
    const { deviceId } = request.params;
    await repos.devices.requireReadable(request.principal!, deviceId);
    const { command } = request.body;
    const checked = checkCommand(command);
    const expiresAt = new Date(Date.now() + (command.expiresIn ?? DEFAULT_EXPIRES_IN) * 1000);
    const created = await repos.commands.create(request.principal!, { deviceId, ...checked, expiresAt });
    const body = { command: present(created) };
    reply.code(201).header('Location', body.command.links.self);
    return body;
  });

  app.get('/api/v1/devices/:deviceId/commands', {
    config,
    schema: {
      tags: ['commands'], summary: "The calling application's commands to a device, newest first",
      params: DeviceIdParams, querystring: CommandListQuery, response: { 200: CommandList, ...errorResponses(404) },
    },
  }, async (request) => {
    const { deviceId } = request.params;
    return streamList(app.links, request.query, {
      service: 'platform', key: 'commands' as const, path: `/api/v1/devices/${deviceId}/commands`, present,
      check: async (q) => {
        const state = parseState(q);
        await repos.devices.requireReadable(request.principal!, deviceId);
        return state;
      },
      load: (w, state) => repos.commands.listForDevice(request.principal!, deviceId, state, w),
      keep: (_q, state) => (state ? { state } : {}),
    });
  });

  app.get('/api/v1/commands/:commandId', {
    config,
    schema: {
      tags: ['commands'], summary: 'One command of the calling application', params: CommandIdParams,
      response: { 200: CommandResponse, ...errorResponses(404) },
    },
  }, async (request) => {
    const command = await repos.commands.get(request.principal!, request.params.commandId);
    if (!command) throw new NotFound();
    return { command: present(command) };
  });

  app.delete('/api/v1/commands/:commandId', {
    config,
    schema: {
      tags: ['commands'], summary: 'Cancel a command not yet sent: 200 with the cancelled command, 409 once it was sent',
      params: CommandIdParams, response: { 200: CommandResponse, ...errorResponses(404, 409) },
    },
  }, async (request) => {
    const out = await repos.commands.cancel(request.principal!, request.params.commandId);
    if (!out) throw new NotFound();
    if (!out.cancelled) throw new Conflict(`command ${out.command.id} is ${out.command.state}; only a queued command can be cancelled`);
    return { command: present(out.command) };
  });
}
