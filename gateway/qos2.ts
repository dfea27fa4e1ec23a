// Exactly-once QoS 2 uplink (MQTT 3.1.1 §4.3.3, method B): the receiver keeps the packet id from the first PUBLISH
// until PUBREL, and a PUBLISH re-sent under it meanwhile (DUP=1) is acknowledged again without being delivered again.
// Aedes keeps the id in its persistence (incomingStorePacket … PUBREL's incomingDelPacket; in Redis when gateways
// share it, so the id survives a reconnection to another gateway), but checks it only after authorizePublish, where
// the platform ingests frames: without this the re-send was stored twice. Aedes also dispatches every packet of one
// socket read at once, so two copies can both pass its check; the copies seen on a connection are kept here too.
import type { Client, PublishPacket } from 'aedes';

/** Aedes' store of inbound QoS 2 packets awaiting PUBREL (aedes-persistence; rejects when it holds none). */
export interface IncomingStore {
  incomingGetPacket(client: Client, packet: { messageId?: number }): Promise<unknown>;
}

interface Taken { settled: boolean; done: Promise<void> }

export function qos2Receipts(store: () => IncomingStore) {
  /** Per connection: packet id → the ingest of its first copy (at most 65,535 ids a connection). */
  const byClient = new WeakMap<Client, Map<number, Taken>>();
  const awaitingRelease = (client: Client, packet: PublishPacket) =>
    store().incomingGetPacket(client, packet).then(() => true, () => false);

  return {
    /**
     * Runs `take` (the ingest) for the first copy of a QoS 2 PUBLISH and settles as it does; a re-send of a PUBLISH
     * taken before (its id still awaiting PUBREL, on this connection or in the session) settles as the first copy did,
     * without running `take` again. A DUP=0 PUBLISH under an id whose exchange ended is a new message.
     */
    once(client: Client, packet: PublishPacket, take: () => Promise<void>): Promise<void> {
      const id = packet.messageId ?? 0;
      let ids = byClient.get(client);
      if (!ids) byClient.set(client, ids = new Map());
      const prior = ids.get(id);
      if (prior && (packet.dup || !prior.settled)) return prior.done;
      const taken: Taken = {
        settled: false,
        done: awaitingRelease(client, packet).then((resend) => (resend ? undefined : take())),
      };
      taken.done.then(() => { taken.settled = true; }, () => { taken.settled = true; });
      ids.set(id, taken);
      return taken.done;
    },
  };
}
