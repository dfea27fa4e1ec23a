import type { LinkBuilder } from '../../context.js';
import type { Trip } from '../../../db/trips/trips.repository.js';

const geo = (p: [number, number] | null) => (p ? { type: 'Point' as const, coordinates: p } : null);

/**
 * Trip: links to the trip's telemetry and events carry since/until in epoch
 * ms and already hold a `?` (the SDK appends `&limit=…`); `since` is exclusive, so it is start − 1 ms.
 * `snapshots` is there for the SDK's trip.snapshots(), with `fields=all` (the endpoint requires a selection). An open
 * trip's links have no `until`, and no `reportCard` until it closes.
 */
export function presentTrip(links: LinkBuilder, t: Trip) {
  const window = { since: t.start.getTime() - 1, until: t.stop?.getTime() };
  const dev = `/api/v1/devices/${t.deviceId}`;
  const out: Record<string, string> = {
    self: links.url('trip', `/api/v1/trips/${t.id}`),
    device: links.url('platform', dev),
    locations: links.url('telemetry', `${dev}/locations`, window),
    messages: links.url('telemetry', `${dev}/messages`, window),
    snapshots: links.url('telemetry', `${dev}/snapshots`, { ...window, fields: 'all' }),
    events: links.url('event', `${dev}/events`, window),
  };
  // a trip's report card is made when it closes: an open trip has no card to link to yet
  if (t.stop) out.reportCard = links.url('behavioral', `/api/v1/trips/${t.id}/report_cards/_current`);
  if (t.vehicleId) out.vehicle = links.url('platform', `/api/v1/vehicles/${t.vehicleId}`);
  return {
    id: t.id, start: t.start.toISOString(), stop: t.stop?.toISOString() ?? null,
    status: t.stop ? 'completed' as const : 'started' as const,
    vehicleId: t.vehicleId, deviceId: t.deviceId, startPoint: geo(t.startPoint), stopPoint: geo(t.stopPoint),
    preview: t.preview, stats: t.stats, meta: { startReason: t.startReason, endReason: t.endReason }, links: out,
  };
}
