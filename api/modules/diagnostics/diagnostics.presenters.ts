import type { LinkBuilder } from '../../context.js';
import type { DtcCode, DtcOccurrence } from '../../../db/repositories/diagnostics.repository.js';

/** Occurrence: `links.code` is the trouble-code record, not the occurrence. */
export function presentOccurrence(links: LinkBuilder, o: DtcOccurrence) {
  const out: Record<string, string> = {
    code: links.url('diagnostic', `/api/v1/codes/${o.codeId}`),
    device: links.url('platform', `/api/v1/devices/${o.deviceId}`),
  };
  if (o.vehicleId) out.vehicle = links.url('platform', `/api/v1/vehicles/${o.vehicleId}`);
  return {
    id: o.id, deviceId: o.deviceId, vehicleId: o.vehicleId, number: o.number, description: o.description,
    start: o.start.toISOString(), stop: o.stop ? o.stop.toISOString() : null, links: out,
  };
}

export function presentCode(links: LinkBuilder, c: DtcCode) {
  return {
    id: c.id, number: c.number, description: c.description, make: c.make, system: c.system, subsystem: c.subsystem,
    links: { self: links.url('diagnostic', `/api/v1/codes/${c.id}`) },
  };
}
