import type { Knex } from 'knex';
import type { StoredMessage } from '../lib/bus.js';

/** How far back each poll looks, so a batch that commits late (after a later one) is not missed. */
const LAG_MS = 5_000;

/**
 * New messages of watched devices read from the database, for an API process that does not run
 * the gateway (`--only api`): the live stream then works across processes, at the cost of a poll
 * (default every 500 ms) that runs only while some device is watched. In one process the
 * gateway's in-process bus is used instead.
 */
export function createMessageFeed(knex: Knex, intervalMs = 500) {
  const watchers = new Map<string, Set<(m: StoredMessage) => void>>();
  const seen = new Map<string, number>();
  let since = new Date();
  let timer: NodeJS.Timeout | null = null;

  async function poll(): Promise<void> {
    const devices = [...watchers.keys()];
    if (!devices.length) return;
    const from = new Date(since.getTime() - LAG_MS);
    const rows = await knex('messages').select('id', 'device_id', 'ts', 'data', 'received_at')
      .whereIn('device_id', devices).where('received_at', '>', from).orderBy(['received_at', 'ts']);
    for (const r of rows) {
      if (seen.has(r.id)) continue;
      seen.set(r.id, new Date(r.received_at).getTime());
      const message: StoredMessage = { id: r.id, deviceId: r.device_id, timestamp: r.ts, data: r.data };
      for (const fn of watchers.get(r.device_id) ?? []) fn(message);
      if (new Date(r.received_at) > since) since = new Date(r.received_at);
    }
    for (const [id, at] of seen) if (at < from.getTime()) seen.delete(id);
  }

  const tick = () => { poll().catch(() => undefined).finally(() => { if (timer) timer = setTimeout(tick, intervalMs); }); };

  return {
    onMessage(deviceId: string, fn: (m: StoredMessage) => void): () => void {
      if (!watchers.size) { since = new Date(); timer = setTimeout(tick, intervalMs); }
      const set = watchers.get(deviceId) ?? new Set();
      set.add(fn);
      watchers.set(deviceId, set);
      return () => {
        set.delete(fn);
        if (!set.size) watchers.delete(deviceId);
        if (!watchers.size && timer) { clearTimeout(timer); timer = null; }
      };
    },
    close() { if (timer) clearTimeout(timer); timer = null; watchers.clear(); },
  };
}
