import type { Knex } from 'knex';
import { removeDeviceSubscriptions } from './repositories/subscriptions.repository.js';
import { removeDeviceRules } from './repositories/rules.repository.js';
import { accessMayHaveEnded } from './access-watch.js';

type Cleanup = (trx: Knex, applicationId: string, deviceId: string) => Promise<unknown>;

/**
 * What an application loses with a device's registration: its own per-device state.
 * Other applications authorized for the device keep theirs. Each capability adds its table here.
 */
const CLEANUPS: Cleanup[] = [
  removeDeviceSubscriptions,
  removeDeviceRules,
];

/**
 * Returns false when the device was not registered with the application. Every caller (device
 * deregistration, admin revocation, dummy deletion) passes here, so live streams of the device are
 * told to re-check their access once the transaction commits (db/access-watch.ts).
 */
export async function deregisterDevice(trx: Knex, applicationId: string, deviceId: string): Promise<boolean> {
  const committed = (trx as unknown as Partial<Knex.Transaction>).executionPromise;
  if (committed) committed.then(accessMayHaveEnded, () => undefined);
  try {
    const removed = await trx('registrations').where({ application_id: applicationId, device_id: deviceId }).delete();
    if (!removed) return false;
    for (const cleanup of CLEANUPS) await cleanup(trx, applicationId, deviceId);
    return true;
  } finally {
    if (!committed) accessMayHaveEnded();
  }
}
