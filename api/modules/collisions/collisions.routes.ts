import { NotFound } from '../../../lib/errors.js';
import type { Collision } from '../../../db/repositories/collisions.repository.js';
import type { App, LinkBuilder } from '../../context.js';
import { DeviceIdParams, errorResponses, StreamQuery, VehicleIdParams } from '../../schemas/common.js';
import { streamList } from '../../plugins/pagination.js';
import { Type } from 'typebox';
import { CollisionIdParams, CollisionList, CollisionResponse } from './collisions.schemas.js';

/** Collision: location as {latitude, longitude}. */
export function presentCollision(links: LinkBuilder, c: Collision) {
  const out: Record<string, string> = {
    self: links.url('safety', `/api/v1/collisions/${c.id}`), device: links.url('platform', `/api/v1/devices/${c.deviceId}`),
  };
  if (c.vehicleId) out.vehicle = links.url('platform', `/api/v1/vehicles/${c.vehicleId}`);
  return {
    id: c.id, deviceId: c.deviceId, vehicleId: c.vehicleId, timestamp: c.timestamp.toISOString(),
    location: c.latitude === null || c.longitude === null ? null : { latitude: c.latitude, longitude: c.longitude },
    links: out,
  };
}

const ListQuery = Type.Object(StreamQuery);

/** Collisions (docs/concepts/diagnostics-and-collisions.md): of a device, of a vehicle, one by id. */
export default async function collisionsRoutes(app: App) {
  const { repos } = app.deps;
  const config = { service: 'safety' as const };
  const collisions = {
    service: 'safety', key: 'collisions', present: (c: Collision) => presentCollision(app.links, c),
  } as const;

  app.get('/api/v1/devices/:deviceId/collisions', {
    config,
    schema: { tags: ['safety'], summary: "A device's collisions, newest first", params: DeviceIdParams, querystring: ListQuery,
      response: { 200: CollisionList, ...errorResponses(404) } },
  }, async (request) => {
    const { deviceId } = request.params;
    return streamList(app.links, request.query, {
      ...collisions, path: `/api/v1/devices/${deviceId}/collisions`,
      check: () => repos.devices.requireReadable(request.principal!, deviceId),
      load: (w) => repos.collisions.listForDevice(request.principal!, deviceId, w),
    });
  });

  app.get('/api/v1/vehicles/:vehicleId/collisions', {
    config,
    schema: { tags: ['safety'], summary: "A vehicle's collisions from the devices the application can read, newest first",
      params: VehicleIdParams, querystring: ListQuery, response: { 200: CollisionList, ...errorResponses(404) } },
  }, async (request) => {
    const { vehicleId } = request.params;
    return streamList(app.links, request.query, {
      ...collisions, path: `/api/v1/vehicles/${vehicleId}/collisions`,
      check: () => repos.vehicles.requireReadable(request.principal!, vehicleId),
      load: (w) => repos.collisions.listForVehicle(request.principal!, vehicleId, w),
    });
  });

  app.get('/api/v1/collisions/:collisionId', {
    config,
    schema: { tags: ['safety'], summary: 'One collision', params: CollisionIdParams, response: { 200: CollisionResponse, ...errorResponses(404) } },
  }, async (request) => {
    const collision = await repos.collisions.get(request.principal!, request.params.collisionId);
    if (!collision) throw new NotFound();
    return { collision: presentCollision(app.links, collision) };
  });
}
