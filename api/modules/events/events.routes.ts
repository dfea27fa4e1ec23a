import type { App } from '../../context.js';
import { NotFound, ValidationError } from '../../../lib/errors.js';
import type { EventFilters } from '../../../db/repositories/events-query.js';
import type { EventRecord } from '../../../db/repositories/events.repository.js';
import { DeviceIdParams, errorResponses, VehicleIdParams } from '../../schemas/common.js';
import { streamList, type Query } from '../../plugins/pagination.js';
import { presentEvent } from './events.presenters.js';
import { EventIdParams, EventList, EventListQuery, EventResponse } from './events.schemas.js';
import { isUuid } from '../../../lib/uuid.js';
import { checkEventTypeFilter, checkObjectTypeFilter } from '../../../lib/event-types.js';


/** Filters of the event lists; empty values count as absent (the SDK sends `since=`). */
function parseFilters(q: Query): EventFilters {
  const pick = (v: string | undefined) => (v === undefined || v.trim() === '' ? undefined : v.trim());
  const f = { type: pick(q.type), objectId: pick(q.objectId), objectType: pick(q.objectType) };
  if (f.type) checkEventTypeFilter(f.type);
  if (f.objectType) checkObjectTypeFilter(f.objectType);
  if (f.objectId && !isUuid(f.objectId)) throw new ValidationError(`objectId must be a UUID, got "${f.objectId}"`);
  return f;
}

/** Events (docs/concepts/rules-events-webhooks.md): of a device, of a vehicle, and one by id. */
export default async function eventsRoutes(app: App) {
  const { repos } = app.deps;
  const config = { service: 'event' as const };
  const events = {
    service: 'event', key: 'events', present: (e: EventRecord) => presentEvent(app.links, e),
    keep: (_q: Query, f: EventFilters) => ({ ...f }),
  } as const;
  /** The filters, checked before whether the caller can read the device or vehicle. */
  const filtersThen = async (q: Query, requireReadable: () => Promise<void>) => {
    const f = parseFilters(q);
    await requireReadable();
    return f;
  };

  app.get('/api/v1/devices/:deviceId/events', {
    config,
    schema: {
      tags: ['events'], summary: "A device's events, newest first", params: DeviceIdParams, querystring: EventListQuery,
      response: { 200: EventList, ...errorResponses(404) },
    },
  }, async (request) => {
    const { deviceId } = request.params;
    return streamList(app.links, request.query, {
      ...events, path: `/api/v1/devices/${deviceId}/events`,
      check: (q) => filtersThen(q, () => repos.devices.requireReadable(request.principal!, deviceId)),
      load: (w, f) => repos.eventsQuery.listForDevice(request.principal!, deviceId, f, w),
    });
  });

  app.get('/api/v1/vehicles/:vehicleId/events', {
    config,
    schema: {
      tags: ['events'], summary: "Events of a vehicle's devices that the application can read, newest first",
      params: VehicleIdParams, querystring: EventListQuery, response: { 200: EventList, ...errorResponses(404) },
    },
  }, async (request) => {
    const { vehicleId } = request.params;
    return streamList(app.links, request.query, {
      ...events, path: `/api/v1/vehicles/${vehicleId}/events`,
      check: (q) => filtersThen(q, () => repos.vehicles.requireReadable(request.principal!, vehicleId)),
      load: (w, f) => repos.eventsQuery.listForVehicle(request.principal!, vehicleId, f, w),
    });
  });

  app.get('/api/v1/events/:eventId', {
    config,
    schema: {
      tags: ['events'], summary: 'One event', params: EventIdParams, response: { 200: EventResponse, ...errorResponses(404) },
    },
  }, async (request) => {
    const event = await repos.eventsQuery.get(request.principal!, request.params.eventId);
    if (!event) throw new NotFound();
    return { event: presentEvent(app.links, event) };
  });
}
