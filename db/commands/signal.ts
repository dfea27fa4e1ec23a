import { EventEmitter } from 'node:events';
import type { Knex } from 'knex';

/**
 * A device has a command to send (one was created, or its in-flight one ended): the gateway holding the device's
 * connection should dispatch, whichever process made the change. Within a process announced here after the commit;
 * on PostgreSQL also by NOTIFY on this channel, with the device id as payload, to every gateway process LISTENing.
 * Both are hints: a gateway dispatches what the database says is due, and looks again for its connected devices
 * every second in case it missed one (gateway/commands.ts).
 */
export const COMMANDS_CHANNEL = 'drivewire_device_commands';

const queued = new EventEmitter();
queued.setMaxListeners(0);

/** Announces, once `trx` commits, that the devices have commands due (call in the statement's transaction). */
export async function commandsDue(trx: Knex, deviceIds: string[]): Promise<void> {
  if (!deviceIds.length) return;
  await trx.raw('SELECT pg_notify(?, d) FROM unnest(?::text[]) AS d', [COMMANDS_CHANNEL, deviceIds]);
  const committed = (trx as unknown as Partial<Knex.Transaction>).executionPromise;
  if (committed) committed.then(() => queued.emit('due', deviceIds), () => undefined);
  else queued.emit('due', deviceIds);
}

/** Announces to this process that the devices have commands due (after a statement that NOTIFYed them committed). */
export function commandsDueHere(deviceIds: string[]): void {
  if (deviceIds.length) queued.emit('due', deviceIds);
}

/** Calls `fn` with device ids after each commit in this process that made commands due; returns an unsubscribe. */
export function onCommandsDue(fn: (deviceIds: string[]) => void): () => void {
  queued.on('due', fn);
  return () => { queued.off('due', fn); };
}
