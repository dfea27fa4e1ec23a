import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { insertEventsNotifying, type EventRow } from './notification-fanout.js';

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

export const EVENT_COLUMNS = ['id', 'device_id', 'vehicle_id', 'application_id', 'ts', 'stored', 'event_type', 'object_type', 'object_id', 'meta'];
export const toEvent = (r: Record<string, any>): EventRecord => ({
  id: r.id, deviceId: r.device_id, vehicleId: r.vehicle_id, applicationId: r.application_id, timestamp: r.ts,
  stored: r.stored, eventType: r.event_type, objectType: r.object_type, objectId: r.object_id, meta: r.meta,
});

/**
 * Every event type the platform produces goes through `insert` (issue 5): it is the one path from a
 * fact (a frame, a rule transition, a trip) to stored events, and later to notifications.
 */
export function eventsRepository(knex: Knex) {
  return {
    async insert(events: NewEvent[], trx: Knex = knex): Promise<EventRecord[]> {
      if (!events.length) return [];
      const stored = new Date();
      const rows: EventRow[] = events.map((e) => ({
        id: randomUUID(), device_id: e.deviceId, vehicle_id: e.vehicleId, application_id: e.applicationId ?? null,
        ts: e.timestamp, stored, event_type: e.eventType, object_type: e.objectType, object_id: e.objectId, meta: e.meta,
      }));
      // One statement with their notifications (spec 3.1: matching subscriptions), in the caller's transaction.
      await insertEventsNotifying(trx, rows);
      return rows.map(toEvent);
    },
  };
}
export type EventsRepository = ReturnType<typeof eventsRepository>;
