import type { App } from '../../context.js';
import { Type } from 'typebox';
import { NotFound } from '../../../lib/errors.js';
import type { Trip } from '../../../db/trips/trips.repository.js';
import { DeviceIdParams, errorResponses, StreamQuery, VehicleIdParams } from '../../schemas/common.js';
import { streamList } from '../../plugins/pagination.js';
import { presentTrip } from './trips.presenters.js';
import { TripIdParams, TripList, TripResponse } from './trips.schemas.js';
import { readableRecentDevices } from './trips.service.js';

const ListQuery = Type.Object(StreamQuery);

/** Trips (docs/concepts/trips-and-report-cards.md): of a device (open ones too), of a vehicle, one by id; newest start first. */
export default async function tripsRoutes(app: App) {
  const { repos } = app.deps;
  const config = { service: 'trip' as const };
  const trips = { service: 'trip', key: 'trips', present: (t: Trip) => presentTrip(app.links, t) } as const;

  app.get('/api/v1/devices/:deviceId/trips', {
    config,
    schema: { tags: ['trips'], summary: "A device's trips, open ones included, newest first", params: DeviceIdParams,
      querystring: ListQuery, response: { 200: TripList, ...errorResponses(404) } },
  }, async (request) => {
    const { deviceId } = request.params;
    return streamList(app.links, request.query, {
      ...trips, path: `/api/v1/devices/${deviceId}/trips`,
      check: () => repos.devices.requireReadable(request.principal!, deviceId),
      load: (w) => repos.trips.listForDevice(request.principal!, deviceId, w),
    });
  });

  app.get('/api/v1/vehicles/:vehicleId/trips', {
    config,
    schema: { tags: ['trips'], summary: "A vehicle's trips from the 20 most recent devices in it that the application can read",
      params: VehicleIdParams, querystring: ListQuery, response: { 200: TripList, ...errorResponses(404) } },
  }, async (request) => {
    const { vehicleId } = request.params;
    return streamList(app.links, request.query, {
      ...trips, path: `/api/v1/vehicles/${vehicleId}/trips`,
      check: () => readableRecentDevices(repos, request.principal!, vehicleId),
      load: (w, devices) => repos.trips.listForVehicle(request.principal!, vehicleId, devices, w),
    });
  });

  app.get('/api/v1/trips/:tripId', {
    config,
    schema: { tags: ['trips'], summary: 'One trip', params: TripIdParams, response: { 200: TripResponse, ...errorResponses(404) } },
  }, async (request) => {
    const trip = await repos.trips.get(request.principal!, request.params.tripId);
    if (!trip) throw new NotFound();
    return { trip: presentTrip(app.links, trip) };
  });
}
