import { EventEmitter } from 'node:events';

/** A telemetry message as stored (the telemetry service presents it with links). */
export interface StoredMessage {
  id: string;
  deviceId: string;
  timestamp: Date;
  data: Record<string, unknown>;
}

/**
 * A notification handed over with its event: its row and its event's, as the statement that stored them leased returned
 * them (db/repositories/notification-fanout.ts EVENTS_AND_LEASED).
 */
export interface HandedOver { row: Record<string, unknown>; event: Record<string, unknown> }

export interface StoredEvent {
  id: string; deviceId: string; eventType: string;
  /**
   * The event's notifications, when the statement that stored it leased them to this process's notification worker
   * (Bus.handOffLeaseMs), for the worker to deliver without claiming them. Absent: whatever notifications the event
   * has wait in the queue for a claim.
   */
  leased?: HandedOver[];
}

/**
 * In-process notifications between the parts of one `drivewire serve` (gateway → live stream,
 * events → notification workers). Parts in other processes learn of the same facts from the
 * database (workers poll the notification queue), so nothing relies on the bus for durability.
 */
export interface Bus {
  publishMessages(messages: StoredMessage[]): void;
  onMessage(deviceId: string, fn: (m: StoredMessage) => void): () => void;
  publishEvents(events: StoredEvent[]): void;
  onEvents(fn: (events: StoredEvent[]) => void): () => void;
  /**
   * How long (ms) a notification stored in this process may be leased at insert to the notification worker running
   * here, which then gets it with its event (StoredEvent.leased) instead of claiming it from the queue; null when no
   * worker here takes them. A process that dies holding such leases leaves rows a claim takes once the lease expires.
   */
  handOffLeaseMs(): number | null;
  /** A notification worker of this process takes leased notifications from now on; the returned function stops it. */
  acceptHandOff(leaseMs: number): () => void;
}

export function createBus(): Bus {
  const emitter = new EventEmitter();
  emitter.setMaxListeners(0);
  let leaseMs: number | null = null;
  return {
    publishMessages(messages) {
      for (const m of messages) emitter.emit(`message:${m.deviceId}`, m);
    },
    onMessage(deviceId, fn) {
      emitter.on(`message:${deviceId}`, fn);
      return () => emitter.off(`message:${deviceId}`, fn);
    },
    publishEvents(events) {
      if (events.length) emitter.emit('events', events);
    },
    onEvents(fn) {
      emitter.on('events', fn);
      return () => emitter.off('events', fn);
    },
    handOffLeaseMs: () => leaseMs,
    acceptHandOff(ms) {
      leaseMs = ms;
      return () => { if (leaseMs === ms) leaseMs = null; };
    },
  };
}
