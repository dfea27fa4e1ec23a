// Exactly-once QoS 2 uplink (MQTT 3.1.1 §4.3.3, method B): the receiver keeps the packet id from the first PUBLISH
// until PUBREL, and a PUBLISH re-sent under it meanwhile (DUP=1) is acknowledged again without being delivered again.
// Aedes keeps the id in its persistence (incomingStorePacket … PUBREL's incomingDelPacket; in Redis when gateways
// share it, so the id survives a reconnection to another gateway), but stores it only after authorizePublish settles
// and checks it only then, where the platform ingests frames: without this the re-send was stored twice. Aedes also
// dispatches every packet of one socket read at once, so two copies can both pass its check; and a copy whose ingest
// still runs (waiting for the device's rate limit, committing) when the connection drops never reaches Aedes' store,
// so the re-send on the next connection would miss it there. The copies seen are kept here per device (the client id
// is the device id), across its connections, until PUBREL.
import type { Client, PublishPacket } from 'aedes';

/** Aedes' store of inbound QoS 2 packets awaiting PUBREL (aedes-persistence; rejects when it holds none). */
export interface IncomingStore {
  incomingGetPacket(client: Client, packet: { messageId?: number }): Promise<unknown>;
}

/** Packet ids a device's exchanges keep at most (Aedes' maxInflightInbound): beyond, the oldest ended take goes. */
export const MAX_IDS_PER_DEVICE = 1000;

interface Taken { settled: boolean; ok: boolean; done: Promise<void> }

export function qos2Receipts(store: () => IncomingStore) {
  /** Per device: packet id → the ingest of its first copy (in the order taken). */
  const byDevice = new Map<string, Map<number, Taken>>();
  const awaitingRelease = (client: Client, packet: PublishPacket) =>
    store().incomingGetPacket(client, packet).then(() => true, () => false);

  const prune = (ids: Map<number, Taken>) => {
    if (ids.size <= MAX_IDS_PER_DEVICE) return;
    for (const [id, t] of ids) {
      if (!t.settled) continue;
      ids.delete(id);
      if (ids.size <= MAX_IDS_PER_DEVICE) return;
    }
  };

  return {
    /**
     * Runs `take` (the ingest) for the first copy of a QoS 2 PUBLISH of device `key` and settles as it does. A copy
     * re-sent under an id still awaiting PUBREL (on any connection of the device, or in the session) is not taken
     * again: it settles once the first copy's ingest does; only if that failed (its connection closed while it waited)
     * is this copy taken. A DUP=0 PUBLISH under an id whose exchange ended is a new message.
     */
    once(key: string, client: Client, packet: PublishPacket, take: () => Promise<void>): Promise<void> {
      const id = packet.messageId ?? 0;
      let ids = byDevice.get(key);
      if (!ids) byDevice.set(key, ids = new Map());
      const prior = ids.get(id);
      const attempt = () => awaitingRelease(client, packet).then((resend) => (resend ? undefined : take()));
      let done: Promise<void>;
      if (prior && !prior.settled) done = prior.done.then(() => undefined, attempt);
      else if (prior && packet.dup && prior.ok) return prior.done;
      else done = attempt();
      const taken: Taken = { settled: false, ok: false, done };
      done.then(() => { taken.settled = true; taken.ok = true; }, () => { taken.settled = true; });
      ids.delete(id); // re-inserted last: the map's order is the takes'
      ids.set(id, taken);
      prune(ids);
      return done;
    },
    /** PUBREL of `messageId` from device `key`: its exchange ended, the id may carry a new message. */
    released(key: string, messageId: number | undefined): void {
      const ids = byDevice.get(key);
      if (!ids) return;
      ids.delete(messageId ?? 0);
      if (!ids.size) byDevice.delete(key);
    },
    /** Devices with ids kept (tests). */
    size: () => byDevice.size,
  };
}
