// The live MQTT sessions of a gateway end when their device's credentials change (secret rotated, dummy deleted),
// whichever process changed them. A session remembers the secret hash it authenticated with; a check reads the
// current hashes of its devices in ONE statement and closes every session whose hash is gone or different. It runs
// on a change signalled in this process, on a PostgreSQL NOTIFY from any process (db/device-credentials.ts), when
// the LISTEN connection is back after a loss (a notification may have gone by meanwhile), and every `periodMs` for
// whatever no signal told. A session registered just after a signal for its device is checked then (it may have
// authenticated with the old secret while the change committed). Checking at each publish
// instead would cost a query per frame and never close a session that only listens for commands.
import type { Aedes, Client } from 'aedes';
import type { Knex } from 'knex';
import { LRUCache } from 'lru-cache';
import type { Logger } from '../lib/logger.js';
import { every } from '../lib/periodic.js';
import { CREDENTIALS_CHANNEL, onCredentialsChanged } from '../db/device-credentials.js';
import { listenChannel } from '../db/pg-listen.js';

interface Session { deviceId: string; hash: string }

/** ms a signal is remembered for the sessions registering after it (an authentication takes a query or two). */
const SIGNAL_MEMORY_MS = 10_000;

/**
 * Of the (device, hash) pairs given, those whose device's stored hash is another, or that no longer exist. Per pair,
 * not per device: a device's session of the old secret and its session of the new one may both be live.
 */
const STALE_SQL = `
  SELECT DISTINCT s.device_id, s.secret_hash
    FROM unnest(?::uuid[], ?::text[]) AS s(device_id, secret_hash)
   WHERE NOT EXISTS (SELECT 1 FROM devices d WHERE d.id = s.device_id AND d.secret_hash = s.secret_hash)`;

export interface CredentialsWatchDeps {
  db: { knex: Knex; kind: 'pg' | 'pglite' };
  /** ms between two checks of every session (the safety net under the signals). */
  periodMs: number;
  log: Logger;
}

export function watchCredentials(d: CredentialsWatchDeps) {
  const authenticated = new WeakMap<Client, Session>();
  const live = new Map<Client, Session>();
  const signalled = new LRUCache<string, true>({ max: 10_000, ttl: SIGNAL_MEMORY_MS });
  const onError = (err: unknown) => d.log.warn({ err }, 'MQTT sessions\' credentials not checked (database unavailable)');

  async function check(only?: Set<string>): Promise<void> {
    const sessions = [...live].filter(([, s]) => !only || only.has(s.deviceId));
    if (!sessions.length) return;
    const { rows } = await d.db.knex.raw(STALE_SQL, [sessions.map(([, s]) => s.deviceId), sessions.map(([, s]) => s.hash)]);
    const pair = (deviceId: string, hash: string) => `${deviceId.toLowerCase()}\u0000${hash}`;
    const stale = new Set((rows as { device_id: string; secret_hash: string }[]).map((r) => pair(r.device_id, r.secret_hash)));
    for (const [client, s] of sessions) {
      if (!stale.has(pair(s.deviceId, s.hash)) || live.get(client) !== s) continue;
      live.delete(client);
      d.log.info({ deviceId: s.deviceId }, 'MQTT session closed: the device\'s credentials changed');
      client.close();
    }
  }

  // One check at a time; devices signalled meanwhile are checked right after it (all of them after a full check).
  let running: Promise<void> | null = null;
  let pending: Set<string> | 'all' | null = null;
  function checkSoon(deviceIds: string[] | 'all'): void {
    if (deviceIds === 'all' || pending === 'all') pending = 'all';
    else {
      const ids: Set<string> = pending ?? new Set();
      for (const id of deviceIds) ids.add(id.toLowerCase());
      pending = ids;
    }
    if (running) return;
    const next = pending;
    pending = null;
    running = check(next === 'all' ? undefined : next).catch(onError).finally(() => {
      running = null;
      if (pending) checkSoon([]);
    });
  }

  const heard = (id: string) => {
    signalled.set(id.toLowerCase(), true);
    if (live.size) checkSoon([id]);
  };
  const offSignal = onCredentialsChanged(heard);
  const listener = d.db.kind === 'pg' ? listenChannel(d.db.knex, CREDENTIALS_CHANNEL, 1000, heard, () => checkSoon('all')) : null;
  const periodic = every(d.periodMs, async () => { checkSoon('all'); await running; });

  return {
    /** At CONNECT: the session of `client` holds while the device's stored secret hash is `hash`. */
    authenticated(client: Client, deviceId: string, hash: string): void {
      authenticated.set(client, { deviceId: deviceId.toLowerCase(), hash });
    },
    /** Follows the broker's sessions from registration to disconnection. */
    attach(broker: Aedes): void {
      broker.on('client', (client) => {
        const s = authenticated.get(client);
        if (!s) return;
        live.set(client, s);
        if (signalled.has(s.deviceId)) checkSoon([s.deviceId]);
      });
      broker.on('clientDisconnect', (client) => { live.delete(client); });
    },
    async close(): Promise<void> {
      offSignal();
      await periodic.stop();
      await listener?.close();
      await running;
    },
  };
}
export type CredentialsWatch = ReturnType<typeof watchCredentials>;
