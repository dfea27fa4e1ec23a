import { Type } from 'typebox';
import { COMMAND_STATES, COMMAND_TYPE_NAMES, DEFAULT_EXPIRES_IN, MAX_EXPIRES_IN } from '../../../lib/commands.js';
import { AnyObject, Links, Nullable, StreamMeta, StreamQuery, Timestamp, Uuid } from '../../schemas/common.js';

export const CreateCommandBody = Type.Object({
  command: Type.Object({
    type: Type.String({ description: `One of ${COMMAND_TYPE_NAMES.join(', ')} (docs/concepts/commands-and-presence.md)` }),
    payload: Type.Optional(Type.Unknown({ description: 'What the type takes: set-interval {"seconds": N}; custom any JSON object; the others none' })),
    expiresIn: Type.Optional(Type.Integer({
      minimum: 1, maximum: MAX_EXPIRES_IN,
      description: `Seconds from now within which the command must be answered; default ${DEFAULT_EXPIRES_IN}`,
    })),
  }),
});

export const Command = Type.Object({
  id: Uuid('Command id'),
  deviceId: Uuid('Device the command is for'),
  type: Type.String({ description: COMMAND_TYPE_NAMES.join(', ') }),
  payload: Nullable(AnyObject('What the command carries (null: nothing)')),
  state: Type.String({ description: `${COMMAND_STATES.join(', ')}` }),
  createdAt: Timestamp('When the command was created'),
  sentAt: Nullable(Timestamp('When it was published to the device (last time, if it was published again)')),
  deliveredAt: Nullable(Timestamp("When the device's MQTT acknowledgement (PUBACK) arrived")),
  respondedAt: Nullable(Timestamp("When the device's reply arrived")),
  expiresAt: Timestamp('When the platform stops waiting for the reply (the command then expires)'),
  response: Nullable(Type.Object({
    ok: Type.Boolean({ description: 'Whether the device carried the command out' }),
    result: Type.Optional(Type.Unknown({ description: 'What the device answered (per type)' })),
    error: Type.Optional(Type.String({ description: 'Why the device did not carry it out' })),
  }, { description: "The device's reply" })),
  links: Links('self, device, events'),
}, { description: 'A command to a device' });

export const CommandResponse = Type.Object({ command: Command });
export const CommandList = Type.Object({ commands: Type.Array(Command), meta: StreamMeta });
export const CommandIdParams = Type.Object({ commandId: Uuid('Command id') });
export const CommandListQuery = Type.Object({
  ...StreamQuery,
  state: Type.Optional(Type.String({ description: `Only commands in this state: ${COMMAND_STATES.join(', ')}` })),
});
