import { EventEmitter } from 'node:events';
import type { Knex } from 'knex';

/**
 * A device's MQTT credentials changed (secret rotated, dummy deleted): every gateway must close the device's
 * sessions, whichever process made the change. Within a process the change is announced here after its commit; on
 * PostgreSQL also by NOTIFY on this channel (delivered at commit to every gateway process LISTENing), with the
 * device id as payload. Both are hints: a gateway re-reads the credentials before it closes anything, and checks
 * all its sessions periodically in case it missed one (gateway/credentials-watch.ts).
 */
export const CREDENTIALS_CHANNEL = 'drivewire_device_credentials';

const changes = new EventEmitter();
changes.setMaxListeners(0);

/** Announces, once `trx` commits, that the device's credentials changed (call in the statement's transaction). */
export async function credentialsChanged(trx: Knex, deviceId: string): Promise<void> {
  await trx.raw('SELECT pg_notify(?, ?)', [CREDENTIALS_CHANNEL, deviceId]);
  const committed = (trx as unknown as Partial<Knex.Transaction>).executionPromise;
  if (committed) committed.then(() => changes.emit('change', deviceId), () => undefined);
  else changes.emit('change', deviceId);
}

/** Calls `fn` with the device id after each change committed in this process; returns an unsubscribe. */
export function onCredentialsChanged(fn: (deviceId: string) => void): () => void {
  changes.on('change', fn);
  return () => { changes.off('change', fn); };
}
