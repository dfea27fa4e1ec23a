import type { Part, PartDeps } from '../../db/part.js';
import { presencePass } from '../../db/presence/pass.js';
import { every } from '../../lib/periodic.js';

/**
 * The presence pass (db/presence/pass.ts) every --gateway-heartbeat-ms: devices go offline after the grace period,
 * and a lost gateway's devices with them, also when every gateway is gone (each gateway runs the pass as well).
 */
export async function startPresencePass(deps: PartDeps): Promise<Part> {
  const { config, db, repos, bus, log } = deps;
  const pass = every(config.gatewayHeartbeatMs, async () => {
    await presencePass({ knex: db.knex, repos, bus }, config.presenceGraceMs, config.gatewayHeartbeatMs)
      .catch((err) => log.error({ err }, 'presence pass failed'));
  });
  return { name: 'presence-pass', close: () => pass.stop() };
}
