import type { App, RequestOf } from '../../context.js';
import { Type } from 'typebox';
import { NotFound } from '../../../lib/errors.js';
import { DeviceIdParams, errorResponses, OffsetQuery, VehicleIdParams } from '../../schemas/common.js';
import { offsetMeta, parseOffsetWindow } from '../../plugins/pagination.js';
import { presentVehicle, presentVehicleBasic } from './platform.presenters.js';
import { LatestVehicleResponse, VehicleList, VehicleResponse } from './platform.schemas.js';

/** Vehicles: those a device has been in, its latest, one by id (docs/concepts/vehicles.md). */
export default async function vehiclesRoutes(app: App) {
  const { repos } = app.deps;
  const config = { service: 'platform' as const };
  const readableDevice = async (request: RequestOf<{ params: typeof DeviceIdParams }>) => {
    const { deviceId } = request.params;
    await repos.devices.requireReadable(request.principal!, deviceId);
    return deviceId;
  };

  app.get('/api/v1/devices/:deviceId/vehicles', {
    config,
    schema: {
      tags: ['platform'], summary: 'Vehicles the device has been in, chronologically', params: DeviceIdParams,
      querystring: Type.Object(OffsetQuery), response: { 200: VehicleList, ...errorResponses(404) },
    },
  }, async (request) => {
    const deviceId = await readableDevice(request);
    const w = parseOffsetWindow(request.query);
    const { total, vehicles } = await repos.vehicles.listForDevice(request.principal!, deviceId, w);
    return {
      vehicles: vehicles.map((v) => presentVehicleBasic(app.links, v)),
      meta: offsetMeta(app.links, 'platform', `/api/v1/devices/${deviceId}/vehicles`, { total, ...w }),
    };
  });

  app.get('/api/v1/devices/:deviceId/vehicles/_latest', {
    config,
    schema: {
      tags: ['platform'], summary: 'The vehicle most recently associated with the device (null when none)',
      params: DeviceIdParams, response: { 200: LatestVehicleResponse, ...errorResponses(404) },
    },
  }, async (request) => {
    const deviceId = await readableDevice(request);
    const vehicle = await repos.vehicles.latestForDevice(request.principal!, deviceId);
    return { vehicle: vehicle ? presentVehicleBasic(app.links, vehicle) : null };
  });

  app.get('/api/v1/vehicles/:vehicleId', {
    config,
    schema: {
      tags: ['platform'], summary: 'One vehicle with its data', params: VehicleIdParams,
      response: { 200: VehicleResponse, ...errorResponses(404) },
    },
  }, async (request) => {
    const { vehicleId } = request.params;
    const vehicle = await repos.vehicles.get(request.principal!, vehicleId);
    if (!vehicle) throw new NotFound();
    return { vehicle: presentVehicle(app.links, vehicle) };
  });
}
