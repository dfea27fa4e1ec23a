import type { App } from '../../context.js';
import { Type } from 'typebox';
import { Forbidden, NotFound } from '../../../lib/errors.js';
import { deregisterDevice } from '../../../db/deregistration.js';
import { DeviceIdParams, errorResponses, NoContent, OffsetQuery } from '../../schemas/common.js';
import { offsetMeta, parseOffsetWindow } from '../../plugins/pagination.js';
import { presentDevice, presentRegisteredDevice } from './platform.presenters.js';
import { DeviceGroupList, DeviceList, DeviceResponse, RegisterBody } from './platform.schemas.js';

/** Devices: the calling application's, one by id, registration and deregistration (Enterprise applications). */
export default async function devicesRoutes(app: App) {
  const { repos, db } = app.deps;
  const config = { service: 'platform' as const };

  app.get('/api/v1/devices', {
    config,
    schema: {
      tags: ['platform'], summary: 'Devices of the calling application, in the order they were added',
      querystring: Type.Object(OffsetQuery), response: { 200: DeviceList, ...errorResponses() },
    },
  }, async (request) => {
    const w = parseOffsetWindow(request.query);
    const { total, devices } = await repos.devices.list(request.principal!, w);
    const presence = await repos.presence.of(devices.map((d) => d.id));
    return {
      devices: devices.map((d) => presentDevice(app.links, d, presence)),
      meta: offsetMeta(app.links, 'platform', '/api/v1/devices', { total, ...w }),
    };
  });

  app.get('/api/v1/devices/:deviceId', {
    config,
    schema: {
      tags: ['platform'], summary: 'One device', params: DeviceIdParams,
      response: { 200: DeviceResponse, ...errorResponses(404) },
    },
  }, async (request) => {
    const { deviceId } = request.params;
    const device = await repos.devices.get(request.principal!, deviceId);
    if (!device) throw new NotFound();
    return { device: presentDevice(app.links, device, await repos.presence.of([device.id])) };
  });

  // The registration record links here, as the original platform's does. Device groups were withdrawn from its
  // documented API and drivewire has none, so every device is in no group: an empty list, not a dead link.
  app.get('/api/v1/devices/:deviceId/groups', {
    config,
    schema: {
      tags: ['platform'], summary: "The device's groups (always none: drivewire has no device groups)", params: DeviceIdParams,
      querystring: Type.Object(OffsetQuery), response: { 200: DeviceGroupList, ...errorResponses(404) },
    },
  }, async (request) => {
    const { deviceId } = request.params;
    if (!(await repos.devices.get(request.principal!, deviceId))) throw new NotFound();
    const w = parseOffsetWindow(request.query);
    return { groups: [], meta: offsetMeta(app.links, 'platform', `/api/v1/devices/${deviceId}/groups`, { total: 0, ...w }) };
  });

  app.post('/api/v1/devices', {
    config,
    schema: {
      tags: ['platform'], summary: 'Register a device its owner has authorized (Enterprise applications only)',
      body: RegisterBody, response: { 200: DeviceResponse, 201: DeviceResponse, ...errorResponses(403, 404, 415) },
    },
  }, async (request, reply) => {
    const principal = request.principal!;
    if (principal.kind !== 'enterprise') throw new Forbidden('Only Enterprise applications can register devices');
    const { id } = request.body.device;
    if (!(await repos.devices.isAuthorized(principal.id, id))) {
      throw new NotFound('Device not found, or its owner has not authorized this application');
    }
    const already = await repos.devices.isRegistered(principal.id, id);
    if (!already) await repos.devices.register(principal.id, id);
    const device = (await repos.devices.get(principal, id))!;
    const body = { device: presentRegisteredDevice(app.links, device) };
    reply.header('Location', body.device.links.self).code(already ? 200 : 201);
    return body;
  });

  app.delete('/api/v1/devices/:deviceId', {
    config,
    schema: {
      tags: ['platform'], summary: 'Deregister a device (Enterprise applications only)', params: DeviceIdParams,
      response: { 204: NoContent('Deregistered'), ...errorResponses(403, 404) },
    },
  }, async (request, reply) => {
    const principal = request.principal!;
    const { deviceId } = request.params;
    if (principal.kind !== 'enterprise') throw new Forbidden('Only Enterprise applications can deregister devices');
    const removed = await db.knex.transaction((trx) => deregisterDevice(trx, principal.id, deviceId));
    if (!removed) throw new NotFound();
    return reply.code(204).send();
  });
}
