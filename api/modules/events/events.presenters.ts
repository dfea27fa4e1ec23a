import type { LinkBuilder } from '../../context.js';
import type { EventRecord } from '../../../db/repositories/events.repository.js';

/** Event: rule objects carry the owning application's id. */
export function presentEvent(links: LinkBuilder, e: EventRecord) {
  const object: { id: string | null; type: string; appId?: string } = { id: e.objectId, type: e.objectType };
  if (e.objectType === 'rule' && e.applicationId) object.appId = e.applicationId;
  return {
    id: e.id,
    timestamp: e.timestamp.toISOString(),
    deviceId: e.deviceId,
    vehicleId: e.vehicleId,
    stored: e.stored.toISOString(),
    storageLatency: e.stored.getTime() - e.timestamp.getTime(),
    eventType: e.eventType,
    object,
    meta: e.meta,
    links: {
      self: links.url('event', `/api/v1/events/${e.id}`),
      notifications: links.url('event', `/api/v1/events/${e.id}/notifications`),
    },
  };
}
