import type { Knex } from 'knex';
import type { Bus } from '../../lib/bus.js';
import type { Repositories } from '../index.js';

/** Heartbeats a gateway may miss before the presence pass takes it for lost. */
export const LOST_AFTER_HEARTBEATS = 3;

/**
 * One presence pass: the devices of lost gateways (no heartbeat for LOST_AFTER_HEARTBEATS × `heartbeatMs`) released
 * as disconnected at the gateway's last heartbeat, then the devices disconnected longer than `graceMs` offline, each
 * with its `device-offline` event. Any process may run it, several at once: the UPDATE's row locks let each device go
 * offline once.
 */
export async function presencePass(d: { knex: Knex; repos: Repositories; bus: Bus }, graceMs: number, heartbeatMs: number): Promise<number> {
  const events = await d.knex.transaction(async (trx) =>
    d.repos.events.insert(await d.repos.presence.sweep(graceMs, LOST_AFTER_HEARTBEATS * heartbeatMs, trx), trx, d.bus.handOffLeaseMs()));
  d.bus.publishEvents(events);
  return events.length;
}
