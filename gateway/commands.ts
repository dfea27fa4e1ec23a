// Commands to devices on this gateway (docs/concepts/commands-and-presence.md). The database is the queue: a command
// waits there, `queued`, until its device is connected to some gateway and subscribed to its commands topic; the
// gateway holding that connection claims it (`sent`) and publishes it at QoS 1. The device's PUBACK makes it
// `delivered`; its reply on devices/<id>/responses `succeeded` or `failed`, with a `command-…` event; an open command
// whose time runs out `expired`, by whichever process's expiry pass comes first. A gateway learns that a device has
// a command due from the process that created it (db/commands/signal.ts: in process, and by NOTIFY on PostgreSQL),
// when the device subscribes, when its in-flight command ends, and every second for all its connected devices, in
// case a signal was missed. Each of these only wakes a dispatch: one statement for all the devices woken meanwhile.
import type { Aedes, Client, PublishPacket } from 'aedes';
import type { Knex } from 'knex';
import type { Bus } from '../lib/bus.js';
import type { Logger } from '../lib/logger.js';
import { every } from '../lib/periodic.js';
import { isUuid } from '../lib/uuid.js';
import { commandMessage, parseReply } from '../lib/commands.js';
import type { Repositories } from '../db/index.js';
import { commandEvent, type Command } from '../db/commands/commands.repository.js';
import { COMMANDS_CHANNEL, commandsDue, onCommandsDue } from '../db/commands/signal.js';
import { listenChannel } from '../db/pg-listen.js';
import { expireCommands } from '../db/commands/expiry.js';
import { commandsTopic } from './topics.js';

export interface CommandsDeps {
  broker: Aedes;
  db: { knex: Knex; kind: 'pg' | 'pglite' };
  repos: Repositories;
  bus: Bus;
  log: Logger;
  /** ms between the expiry passes (and the looks at every connected device's queue). */
  periodMs?: number;
}

const PERIOD_MS = 1000;

/** A batch of calls made within one turn of the event loop, run together, one batch at a time. */
function batcher<T, R>(run: (items: T[]) => Promise<R[]>, onError: (err: unknown) => void) {
  let queue: { item: T; resolve: (r: R) => void; reject: (e: unknown) => void }[] = [];
  let running: Promise<void> | null = null;
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    if (running || !queue.length) return;
    const batch = queue;
    queue = [];
    running = run(batch.map((b) => b.item)).then(
      (out) => batch.forEach((b, i) => b.resolve(out[i])),
      (err) => { onError(err); batch.forEach((b) => b.reject(err)); },
    ).finally(() => { running = null; if (queue.length) schedule(); });
  };
  const schedule = () => { if (!scheduled) { scheduled = true; setImmediate(flush); } };
  return {
    add(item: T): Promise<R> {
      return new Promise<R>((resolve, reject) => { queue.push({ item, resolve, reject }); schedule(); });
    },
    idle: async () => { while (running || queue.length) await (running ?? new Promise((r) => setImmediate(r))); },
  };
}

export function startCommands(d: CommandsDeps) {
  const { broker, repos, bus } = d;
  const log = d.log.child({ part: 'commands' });
  /** The authenticated connection of each device on this gateway. */
  const clients = new Map<string, Client>();
  /** Commands published on each connection (not published again on it when its session resubscribes). */
  const published = new WeakMap<Client, Set<string>>();
  /**
   * Each connection's commands written and not yet acknowledged, in the order written: a device acknowledges QoS 1
   * PUBLISHes in the order it received them (MQTT 3.1.1 §4.6), and for a clean session Aedes' `ack` event does not
   * carry the packet acknowledged (it keeps no copy of it).
   */
  const unacked = new WeakMap<Client, string[]>();
  const deviceOf = (client: Client) => client.id.toLowerCase();
  const subscribed = (client: Client) => Boolean((client as unknown as { subscriptions?: Record<string, unknown> }).subscriptions?.[commandsTopic(deviceOf(client))]);

  const publish = (client: Client, c: Command) => {
    let sent = published.get(client);
    if (!sent) published.set(client, sent = new Set());
    sent.add(c.id);
    let waiting = unacked.get(client);
    if (!waiting) unacked.set(client, waiting = []);
    waiting.push(c.id);
    const packet = { cmd: 'publish', topic: commandsTopic(c.deviceId), payload: Buffer.from(JSON.stringify(commandMessage(c))), qos: 1, retain: false, dup: false } as unknown as PublishPacket;
    client.publish(packet, (err?: Error | null) => {
      if (err) log.debug({ err, deviceId: c.deviceId, commandId: c.id }, 'command not written to its connection (sent again at the next clean connection)');
    });
  };

  /**
   * Dispatch, for the devices woken meanwhile: those subscribed get what is due, and those whose session is clean
   * (`resend`) also their commands a previous connection never acknowledged.
   */
  const dispatch = batcher<{ id: string; resend: boolean }, void>(async (woken) => {
    const ids = [...new Set(woken.map((w) => w.id))].filter((id) => { const c = clients.get(id); return c && subscribed(c); });
    const again = [...new Set(woken.filter((w) => w.resend).map((w) => w.id))].filter((id) => clients.has(id));
    for (const c of await repos.commands.unacknowledged(again)) {
      const client = clients.get(c.deviceId);
      if (client && !published.get(client)?.has(c.id)) publish(client, c);
    }
    for (const c of await repos.commands.claim(ids)) {
      const client = clients.get(c.deviceId);
      if (client) publish(client, c);
    }
    return woken.map(() => undefined);
  }, (err) => log.warn({ err }, 'commands not dispatched (database unavailable): tried again within a second'));
  const wake = (deviceIds: Iterable<string>, opts: { resend?: boolean } = {}) => {
    for (const raw of deviceIds) {
      const id = raw.toLowerCase();
      if (clients.has(id)) dispatch.add({ id, resend: opts.resend ?? false }).catch(() => undefined);
    }
  };

  broker.on('clientReady', (client) => {
    clients.set(deviceOf(client), client);
    // A persistent session's subscription is restored before the client is ready: what is due goes at once.
    if (subscribed(client)) wake([deviceOf(client)]);
  });
  broker.on('clientDisconnect', (client) => {
    if (clients.get(deviceOf(client)) === client) clients.delete(deviceOf(client));
  });
  broker.on('subscribe', (subs, client) => {
    const id = deviceOf(client);
    if (clients.get(id) === client && subs.some((s) => s.topic === commandsTopic(id))) wake([id], { resend: client.clean });
  });

  const delivered = batcher<string, void>(async (ids) => {
    await repos.commands.delivered(ids);
    return ids.map(() => undefined);
  }, (err) => log.warn({ err }, 'command PUBACKs not recorded (database unavailable): their replies still end them'));
  /** The command a PUBACK acknowledges: the packet's, when Aedes kept it (a persistent session), else the oldest written. */
  const acknowledged = (client: Client, p: PublishPacket | undefined): string | undefined => {
    const waiting = unacked.get(client) ?? [];
    if (p?.topic !== commandsTopic(deviceOf(client))) return waiting.shift();
    try {
      const { commandId } = JSON.parse(p.payload.toString()) as { commandId?: unknown };
      if (typeof commandId !== 'string') return undefined;
      const at = waiting.indexOf(commandId);
      if (at !== -1) waiting.splice(at, 1);
      return commandId;
    } catch { return undefined; /* the platform's own payload: always JSON */ }
  };
  broker.on('ack', (packet, client) => {
    if (!client || !clients.has(deviceOf(client))) return;
    const commandId = acknowledged(client, packet as PublishPacket | undefined);
    if (commandId) delivered.add(commandId).catch(() => undefined);
  });

  type Reply = { deviceId: string; commandId: string; ok: boolean; response: Record<string, unknown> };
  /** Replies of any devices, in one transaction: answered (null) or the reason each is refused. */
  const replies = batcher<Reply, string | null>(async (batch) => {
    const { answered, events } = await d.db.knex.transaction(async (trx) => {
      const answered = await repos.commands.reply(batch, trx);
      await commandsDue(trx, [...new Set(answered.map((c) => c.deviceId))]);
      return { answered, events: await repos.events.insert(answered.map(commandEvent), trx, bus.handOffLeaseMs()) };
    });
    bus.publishEvents(events);
    const ok = new Set(answered.map((c) => `${c.deviceId}/${c.id}`));
    return batch.map((r) => (ok.has(`${r.deviceId}/${r.commandId.toLowerCase()}`) ? null
      : `reply to command ${r.commandId}, which is not this device's or does not wait for a reply`));
  }, (err) => log.warn({ err }, 'command replies not stored (database unavailable): the devices send them again'));

  const expire = async () => {
    const expired = await expireCommands({ knex: d.db.knex, repos, bus });
    if (expired) log.debug({ expired }, 'commands expired');
  };

  const offSignal = onCommandsDue((ids) => wake(ids));
  const listener = d.db.kind === 'pg' ? listenChannel(d.db.knex, COMMANDS_CHANNEL, 1000, (id) => wake([id]), () => wake(clients.keys())) : null;
  const periodic = every(d.periodMs ?? PERIOD_MS, async () => {
    wake(clients.keys());
    await expire().catch((err) => log.warn({ err }, 'commands not expired (database unavailable)'));
  });

  return {
    /**
     * A device's reply (the payload it published on devices/<id>/responses): resolves null once stored, or with the
     * reason it is refused (not a reply, or to no open command of this device).
     */
    async reply(deviceId: string, payload: Buffer): Promise<string | null> {
      const r = parseReply(payload.toString('utf8'));
      if (typeof r === 'string') return r;
      const { commandId, ...response } = r;
      if (!isUuid(commandId)) return `reply to "${String(commandId).slice(0, 64)}", which is not a command id`;
      return replies.add({ deviceId, commandId, ok: r.ok, response });
    },
    async close(): Promise<void> {
      offSignal();
      await periodic.stop();
      await listener?.close();
      await dispatch.idle();
      await delivered.idle();
      await replies.idle();
    },
  };
}
export type GatewayCommands = ReturnType<typeof startCommands>;
