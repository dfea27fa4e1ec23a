import type { Part, PartDeps } from '../../db/part.js';
import { expireCommands } from '../../db/commands/expiry.js';
import { every } from '../../lib/periodic.js';

/** ms between the workers' expiry passes (each gateway runs its own as well). */
const PERIOD_MS = 1000;

/**
 * Expires the commands whose time ran out (db/commands/expiry.ts), so that they expire, with their events, even
 * while no gateway runs.
 */
export async function startCommandExpiry(deps: PartDeps): Promise<Part> {
  const { db, repos, bus, log } = deps;
  const pass = every(PERIOD_MS, async () => {
    await expireCommands({ knex: db.knex, repos, bus }).catch((err) => log.error({ err }, 'command expiry failed'));
  });
  return { name: 'command-expiry', close: () => pass.stop() };
}
