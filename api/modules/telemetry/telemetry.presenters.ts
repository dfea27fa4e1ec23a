import type { LinkBuilder } from '../../context.js';
import type { LocationRecord, MessageRecord } from '../../../db/repositories/telemetry.repository.js';
import { iso } from '../../../lib/time.js';

/** Where a message lives: every message and snapshot links here. */
export function messageUrl(links: LinkBuilder, id: string, deviceId: string): string {
  return links.url('telemetry', `/api/v1/messages/${id}`, { deviceId });
}

/** A message as the REST API and the live stream show it; the timestamp may come from the bus as a string. */
export function presentMessage(links: LinkBuilder, m: Omit<MessageRecord, 'timestamp'> & { timestamp: Date | string }) {
  return { id: m.id, timestamp: iso(m.timestamp)!, data: m.data, links: { self: messageUrl(links, m.id, m.deviceId) } };
}

/** Snapshot: the message id and timestamp with only the requested parameters. */
export const presentSnapshot = presentMessage;

/**
 * A location as a GeoJSON Feature: properties carry timestamp, id and the requested parameters both
 * flat (as the original platform's documentation shows them) and under `data` (as its CLI reads them). Without
 * requested fields, `data` is left out.
 */
export function presentFeature(l: LocationRecord, withFields: boolean) {
  const properties = withFields
    ? { ...l.data, timestamp: iso(l.timestamp)!, id: l.id, data: l.data }
    : { timestamp: iso(l.timestamp)!, id: l.id };
  return { type: 'Feature' as const, geometry: { type: 'Point' as const, coordinates: [l.lon, l.lat] }, properties };
}
