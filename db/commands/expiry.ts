import type { Knex } from 'knex';
import type { Bus } from '../../lib/bus.js';
import type { Repositories } from '../index.js';
import { commandEvent } from './commands.repository.js';
import { commandsDue } from './signal.js';

/**
 * One expiry pass: open commands whose time ran out become `expired`, each with its `command-expired` event (its
 * notifications handed to this process's delivery worker when one runs here), and their devices' next commands are
 * signalled. Any process may run it, several at once: the UPDATE's row locks let each command expire once.
 */
export async function expireCommands(d: { knex: Knex; repos: Repositories; bus: Bus }): Promise<number> {
  const events = await d.knex.transaction(async (trx) => {
    const expired = await d.repos.commands.expire(trx);
    await commandsDue(trx, [...new Set(expired.map((c) => c.deviceId))]);
    return d.repos.events.insert(expired.map(commandEvent), trx, d.bus.handOffLeaseMs());
  });
  d.bus.publishEvents(events);
  return events.length;
}
