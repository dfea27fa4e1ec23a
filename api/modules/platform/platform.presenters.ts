import type { LinkBuilder } from '../../context.js';
import type { Device } from '../../../db/repositories/devices.repository.js';
import type { Vehicle } from '../../../db/repositories/vehicles.repository.js';
import type { Presence } from '../../../db/presence/presence.repository.js';
import { iso } from '../../../lib/time.js';

const DEFAULT_ICON = 'https://raw.githubusercontent.com/drivewire/assets/main/device.png';

export function deviceLinks(links: LinkBuilder, id: string) {
  return {
    self: links.url('platform', `/api/v1/devices/${id}`),
    vehicles: links.url('platform', `/api/v1/devices/${id}/vehicles`),
    latestVehicle: links.url('platform', `/api/v1/devices/${id}/vehicles/_latest`),
    rules: links.url('rule', `/api/v1/devices/${id}/rules`),
    events: links.url('event', `/api/v1/devices/${id}/events`),
    subscriptions: links.url('event', `/api/v1/devices/${id}/subscriptions`),
    trips: links.url('trip', `/api/v1/devices/${id}/trips`),
  };
}

/** A device's presence (docs/concepts/commands-and-presence.md); one that never connected is offline, never seen. */
export function presentStatus(p: Presence | undefined) {
  return { online: p?.online ?? false, lastSeenAt: iso(p?.lastSeenAt), lastConnectedAt: iso(p?.lastConnectedAt) };
}

/** Device; with its presence, `status` (an addition to the original platform's device). */
export function presentDevice(links: LinkBuilder, d: Device, presence?: Map<string, Presence>) {
  return {
    id: d.id, name: d.name, chipId: d.chipId, createdAt: iso(d.createdAt)!, icon: d.icon ?? DEFAULT_ICON,
    ...(presence && { status: presentStatus(presence.get(d.id)) }),
    links: { ...deviceLinks(links, d.id), commands: links.url('platform', `/api/v1/devices/${d.id}/commands`) },
  };
}

/** The registration answer carries self, groups, vehicles and latestVehicle links (as the original platform's registration does). */
export function presentRegisteredDevice(links: LinkBuilder, d: Device) {
  const { self, vehicles, latestVehicle } = deviceLinks(links, d.id);
  const groups = links.url('platform', `/api/v1/devices/${d.id}/groups`);
  return { ...presentDevice(links, d), links: { self, groups, vehicles, latestVehicle } };
}

/** year, make, model and trim "may be absent" (spec): a VIN that does not decode leaves them out, not null. */
function basic(v: Vehicle) {
  return {
    id: v.id, vin: v.vin,
    ...(v.year != null && { year: v.year }), ...(v.make != null && { make: v.make }),
    ...(v.model != null && { model: v.model }), ...(v.trim != null && { trim: v.trim }),
    createdAt: iso(v.createdAt)!, lastStartup: iso(v.lastStartup),
  };
}

/** Vehicle in device lists and `_latest`: basic fields, links self/trips/collisions/reportCards. */
export function presentVehicleBasic(links: LinkBuilder, v: Vehicle) {
  return {
    ...basic(v),
    links: {
      self: links.url('platform', `/api/v1/vehicles/${v.id}`),
      trips: links.url('trip', `/api/v1/vehicles/${v.id}/trips`),
      collisions: links.url('safety', `/api/v1/vehicles/${v.id}/collisions`),
      reportCards: links.url('behavioral', `/api/v1/vehicles/${v.id}/report_cards`),
    },
  };
}

/** Single vehicle: with `data`, links self. */
export function presentVehicle(links: LinkBuilder, v: Vehicle) {
  return { ...basic(v), data: v.data ?? {}, links: { self: links.url('platform', `/api/v1/vehicles/${v.id}`) } };
}
