// Device presence on this gateway (docs/concepts/commands-and-presence.md). A device's row in device_presence says
// which gateway and connection hold it now; a connection that opens takes the row (a device that was offline gets
// `device-online`), one that closes lets go of it only if it still holds it, so a device that moved to another
// gateway stays online whatever order the two gateways see its connections in. A device that is not connected again
// within the grace period goes offline (`device-offline`, stamped when its connection closed), by whichever
// process's presence pass sees it first. Each gateway writes a heartbeat; one that stops without closing its
// connections (SIGKILL) leaves its devices to the others' passes, disconnected as of its last heartbeat.
// Frames and keep-alives move `lastSeenAt`; they are kept in memory and written once a heartbeat, for all devices.
import { randomUUID } from 'node:crypto';
import type { Aedes, Client } from 'aedes';
import type { Knex } from 'knex';
import type { Bus } from '../lib/bus.js';
import type { Logger } from '../lib/logger.js';
import { every } from '../lib/periodic.js';
import type { Repositories } from '../db/index.js';
import type { Connection } from '../db/presence/presence.repository.js';
import { presencePass } from '../db/presence/pass.js';

export interface PresenceDeps {
  broker: Aedes;
  knex: Knex;
  repos: Repositories;
  bus: Bus;
  log: Logger;
  /** ms a disconnected device stays online (a reconnect within it is no event). */
  graceMs: number;
  /** ms between heartbeats (and presence passes); a gateway silent for 3 of them is lost. */
  heartbeatMs: number;
}

export function startPresence(d: PresenceDeps) {
  const gatewayId = randomUUID();
  const startedAt = new Date();
  const log = d.log.child({ part: 'presence' });
  const connectionOf = new WeakMap<Client, string>();
  const deviceOf = (client: Client) => client.id.toLowerCase();
  /** Devices seen since the last write, and when (epoch ms: a frame's cost is one Map set). */
  let seen = new Map<string, number>();
  let opened: Connection[] = [];
  let closed: Connection[] = [];
  let writing: Promise<void> | null = null;

  /** One write at a time: the connections opened and closed meanwhile, in that order, then what was seen. */
  const write = async () => {
    const [o, c, s] = [opened, closed, seen];
    opened = [];
    closed = [];
    seen = new Map();
    try {
      if (o.length) {
        const events = await d.knex.transaction(async (trx) =>
          d.repos.events.insert(await d.repos.presence.connected(gatewayId, o, trx), trx, d.bus.handOffLeaseMs()));
        d.bus.publishEvents(events);
      }
      await d.repos.presence.disconnected(c);
      // after the closes: a device's last frame before it disconnected still moves its row
      await d.repos.presence.seen([...s].map(([deviceId, at]) => ({ deviceId, at: new Date(at) })));
    } catch (err) {
      // kept for the next write: a connection's state is not lost to a database outage
      opened = [...o, ...opened];
      closed = [...c, ...closed];
      for (const [id, at] of s) if (!seen.has(id)) seen.set(id, at);
      throw err;
    }
  };
  let stopping = false;
  const writeSoon = () => {
    if (writing) return;
    writing = new Promise<void>((r) => setImmediate(r)).then(write)
      .catch((err) => log.warn({ err }, 'device presence not written (database unavailable): written at the next heartbeat'))
      .finally(() => { writing = null; if (!stopping && (opened.length || closed.length)) setTimeout(writeSoon, d.heartbeatMs).unref(); });
  };

  const see = (client: Client) => {
    seen.set(deviceOf(client), Date.now());
  };

  d.broker.on('clientReady', (client) => {
    const connectionId = randomUUID();
    connectionOf.set(client, connectionId);
    const at = new Date();
    opened.push({ deviceId: deviceOf(client), connectionId, at });
    writeSoon();
  });
  d.broker.on('clientDisconnect', (client) => {
    const connectionId = connectionOf.get(client);
    if (!connectionId) return;
    const at = new Date();
    closed.push({ deviceId: deviceOf(client), connectionId, at });
    writeSoon();
  });
  d.broker.on('ping', (_packet, client) => { if (connectionOf.has(client)) see(client); });

  const heartbeat = async () => {
    await d.repos.presence.heartbeat(gatewayId, startedAt);
    if (seen.size) writeSoon();
    await writing;
    await presencePass(d, d.graceMs, d.heartbeatMs);
  };
  const ready = d.repos.presence.heartbeat(gatewayId, startedAt);
  const periodic = every(d.heartbeatMs, () => heartbeat().catch((err) => log.warn({ err }, 'gateway heartbeat not written (database unavailable)')));

  return {
    gatewayId,
    ready,
    /** A frame of this connection's device arrived. */
    seen(client: Client): void { if (connectionOf.has(client)) see(client); },
    /** After the broker closed its connections: their disconnections written, the heartbeat's row gone. */
    async close(): Promise<void> {
      stopping = true;
      await periodic.stop();
      await writing;
      // one last write of what the broker's close disconnected (a database outage leaves them to the lost-gateway pass)
      if (opened.length || closed.length || seen.size) {
        writeSoon();
        await writing;
      }
      await d.repos.presence.stopped(gatewayId).catch(() => undefined);
    },
  };
}
export type GatewayPresence = ReturnType<typeof startPresence>;
