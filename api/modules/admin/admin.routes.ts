import type { App } from '../../context.js';
import { Type } from 'typebox';
import { NotFound, ValidationError } from '../../../lib/errors.js';
import { iso } from '../../../lib/time.js';
import { deregisterDevice } from '../../../db/deregistration.js';
import type { Application as StoredApplication } from '../../../db/repositories/applications.repository.js';
import type { Device } from '../../../db/repositories/devices.repository.js';
import { errorResponses, NoContent, Uuid } from '../../schemas/common.js';
import {
  AdminDevice, Application, Authorization, AuthorizeBody, CreateApplicationBody, CreateOwnerBody, CreateTokenBody,
  Owner, ProvisionDeviceBody, Token,
} from './admin.schemas.js';

/** `default` names the default application created on first start (`drivewire apps token default`). */
const TokenParams = Type.Object({
  applicationId: Type.Union([Uuid('Application id'), Type.Literal('default', { description: 'The default application' })],
    { description: 'Application id, or `default` for the default application' }),
});
const DeviceParams = Type.Object({ deviceId: Uuid('Device id') });
const AuthParams = Type.Object({ deviceId: Uuid('Device id'), applicationId: Uuid('Application id') });
const tags = ['admin'];

/**
 * Administration that makes the platform reachable: applications, tokens, owners, device
 * provisioning, and an owner's authorization of an application. Guarded by the admin token.
 */
export default async function adminRoutes(app: App) {
  const { repos, db } = app.deps;
  const presentApp = (a: StoredApplication, extra: { secret?: string; webhookSecret?: string } = {}) =>
    ({ id: a.id, name: a.name, kind: a.kind, createdAt: iso(a.createdAt)!, ...extra });
  const presentDevice = (d: Device, secret?: string) => ({
    id: d.id, name: d.name, chipId: d.chipId, caseId: d.caseId, ownerId: d.ownerId, createdAt: iso(d.createdAt)!,
    ...(secret ? { secret } : {}),
  });
  const mustDevice = async (id: string) => {
    const d = await repos.devices.getAny(id);
    if (!d) throw new NotFound(`Device ${id} not found`);
    return d;
  };
  const mustApp = async (id: string) => {
    const a = await repos.applications.get(id);
    if (!a) throw new NotFound(`Application ${id} not found`);
    return a;
  };

  app.post('/admin/v1/applications', {
    schema: { tags, summary: 'Create an application', body: CreateApplicationBody,
      response: { 201: Type.Object({ application: Application }), ...errorResponses(415) } },
  }, async (request, reply) => {
    const { name, kind } = request.body.application;
    const created = await repos.applications.create({ name, kind });
    reply.code(201);
    return { application: presentApp(created, { secret: created.secret, webhookSecret: created.webhookSecret }) };
  });

  app.get('/admin/v1/applications', {
    schema: { tags, summary: 'List applications', response: { 200: Type.Object({ applications: Type.Array(Application) }), ...errorResponses() } },
  }, async () => ({ applications: (await repos.applications.list()).map((a) => presentApp(a)) }));

  app.post('/admin/v1/applications/:applicationId/tokens', {
    schema: { tags, summary: 'Issue a Bearer token for an application', params: TokenParams, body: CreateTokenBody,
      response: { 201: Type.Object({ token: Token }), ...errorResponses(404, 415) } },
  }, async (request, reply) => {
    const { applicationId } = request.params;
    const application = applicationId === 'default' ? await repos.applications.findDefault() : await mustApp(applicationId);
    if (!application) throw new NotFound('No default application: it is created when the platform first starts');
    const ttl = request.body?.token?.ttlSeconds ?? null;
    const token = await repos.applications.createToken(application.id, ttl);
    reply.code(201);
    return { token: { accessToken: token.accessToken, expiresAt: iso(token.expiresAt) } };
  });

  app.post('/admin/v1/owners', {
    schema: { tags, summary: 'Create a device owner', body: CreateOwnerBody,
      response: { 201: Type.Object({ owner: Owner }), ...errorResponses(415) } },
  }, async (request, reply) => {
    const owner = await repos.devices.createOwner(request.body.owner);
    reply.code(201);
    return { owner: { ...owner, createdAt: iso(owner.createdAt)! } };
  });

  app.post('/admin/v1/devices', {
    schema: { tags, summary: 'Provision a device; its MQTT secret is returned once', body: ProvisionDeviceBody,
      response: { 201: Type.Object({ device: AdminDevice }), ...errorResponses(404, 409, 415) } },
  }, async (request, reply) => {
    const input = request.body.device;
    if (input.id && (await repos.devices.exists(input.id))) throw new ValidationError(`device.id ${input.id} is already in use`);
    const result = await db.knex.transaction(async (trx) => {
      let ownerId = input.ownerId;
      if (ownerId && !(await repos.devices.ownerExists(ownerId, trx))) throw new NotFound(`Owner ${ownerId} not found`);
      ownerId ??= (await repos.devices.createOwner({ name: `Owner of ${input.name}` }, trx)).id;
      return repos.devices.provision({ ...input, ownerId }, trx);
    });
    reply.code(201);
    return { device: presentDevice(result.device, result.secret) };
  });

  app.get('/admin/v1/devices', {
    schema: { tags, summary: 'List all devices', response: { 200: Type.Object({ devices: Type.Array(AdminDevice) }), ...errorResponses() } },
  }, async () => ({ devices: (await repos.devices.listAll()).map((d) => presentDevice(d)) }));

  app.post('/admin/v1/devices/:deviceId/secret', {
    schema: { tags, summary: 'Rotate a device MQTT secret', params: DeviceParams,
      response: { 200: Type.Object({ device: AdminDevice }), ...errorResponses(404) } },
  }, async (request) => {
    const device = await mustDevice(request.params.deviceId);
    return { device: presentDevice(device, await repos.devices.rotateSecret(device.id)) };
  });

  app.post('/admin/v1/devices/:deviceId/authorizations', {
    schema: { tags, summary: "The device owner's authorization of an application", params: DeviceParams, body: AuthorizeBody,
      response: { 201: Type.Object({ authorization: Authorization }), ...errorResponses(404, 415) } },
  }, async (request, reply) => {
    const device = await mustDevice(request.params.deviceId);
    const { applicationId } = request.body.authorization;
    await mustApp(applicationId);
    const createdAt = await repos.devices.authorize(device.id, applicationId);
    reply.code(201);
    return { authorization: { deviceId: device.id, applicationId, createdAt: iso(createdAt)! } };
  });

  app.delete('/admin/v1/devices/:deviceId/authorizations/:applicationId', {
    schema: { tags, summary: 'Revoke an authorization (also ends the registration and its per-application state)',
      params: AuthParams, response: { 204: NoContent(), ...errorResponses(404) } },
  }, async (request, reply) => {
    const { deviceId, applicationId } = request.params;
    const removed = await db.knex.transaction(async (trx) => {
      await deregisterDevice(trx, applicationId, deviceId);
      return repos.devices.revoke(deviceId, applicationId, trx);
    });
    if (!removed) throw new NotFound('No such authorization');
    return reply.code(204).send();
  });

  app.post('/admin/v1/devices/:deviceId/registrations', {
    schema: { tags, summary: 'Register an authorized device with an Enterprise application on its behalf', params: DeviceParams,
      body: AuthorizeBody, response: { 201: Type.Object({ authorization: Authorization }), ...errorResponses(404, 415) } },
  }, async (request, reply) => {
    const device = await mustDevice(request.params.deviceId);
    const { applicationId } = request.body.authorization;
    const application = await mustApp(applicationId);
    if (application.kind !== 'enterprise') throw new ValidationError('Only Enterprise applications register devices');
    if (!(await repos.devices.isAuthorized(applicationId, device.id))) throw new NotFound('The device owner has not authorized this application');
    await repos.devices.register(applicationId, device.id);
    reply.code(201);
    return { authorization: { deviceId: device.id, applicationId, createdAt: iso(new Date())! } };
  });
}
