import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { EVENT_COLUMNS, insertEventsNotifying, type EventRow } from './notification-fanout.js';
import type { StoredEvent } from '../../lib/bus.js';

export interface NewEvent {
  deviceId: string;
  vehicleId: string | null;
  /** Rule events belong to the application that owns the rule; null = visible to every reader of the device. */
  applicationId?: string | null;
  timestamp: Date;
  eventType: string;
  objectType: string;
  objectId: string | null;
  meta: Record<string, unknown> | null;
}

export interface EventRecord extends Required<NewEvent> { id: string; stored: Date }

/** The events table's columns, defined beside the statements that store events (notification-fanout.ts). */
export { EVENT_COLUMNS, type EventRow };
export const toEvent = (r: EventRow): EventRecord => ({
  id: r.id, deviceId: r.device_id, vehicleId: r.vehicle_id, applicationId: r.application_id, timestamp: r.ts,
  stored: r.stored, eventType: r.event_type, objectType: r.object_type, objectId: r.object_id, meta: r.meta,
});

/**
 * Every event type the platform produces goes through `insert`: it is the one path from a
 * fact (a frame, a rule transition, a trip) to stored events, and later to notifications.
 */
export function eventsRepository(knex: Knex) {
  return {
    /**
     * With `leaseMs` (lib/bus.ts handOffLeaseMs: a notification worker of this process takes them), the events'
     * notifications are stored leased to it and come back with them (`leased`), for the bus.
     */
    async insert(events: NewEvent[], trx: Knex = knex, leaseMs: number | null = null): Promise<(EventRecord & Pick<StoredEvent, 'leased'>)[]> {
      if (!events.length) return [];
      const stored = new Date();
      const rows: EventRow[] = events.map((e) => ({
        id: randomUUID(), device_id: e.deviceId, vehicle_id: e.vehicleId, application_id: e.applicationId ?? null,
        ts: e.timestamp, stored, event_type: e.eventType, object_type: e.objectType, object_id: e.objectId, meta: e.meta,
      }));
      // One statement with their notifications (matching subscriptions), in the caller's transaction.
      const leased = await insertEventsNotifying(trx, rows, leaseMs);
      return rows.map((r) => (leaseMs === null ? toEvent(r) : { ...toEvent(r), leased: leased.get(r.id) ?? [] }));
    },
  };
}
export type EventsRepository = ReturnType<typeof eventsRepository>;
