import { EventEmitter } from 'node:events';

/** A telemetry message as stored (the telemetry service presents it with links). */
export interface StoredMessage {
  id: string;
  deviceId: string;
  timestamp: Date;
  data: Record<string, unknown>;
}

export interface StoredEvent { id: string; deviceId: string; eventType: string }

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
}

export function createBus(): Bus {
  const emitter = new EventEmitter();
  emitter.setMaxListeners(0);
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
  };
}
