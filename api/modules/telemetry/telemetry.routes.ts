import type { FastifyRequest } from 'fastify';
import type { App, RequestOf } from '../../context.js';
import { Type } from 'typebox';
import { NotFound } from '../../../lib/errors.js';
import { DeviceIdParams, errorResponses, StreamQuery } from '../../schemas/common.js';
import { parseListWindow, streamMeta, type Query } from '../../plugins/pagination.js';
import type { StreamCursor } from '../../../db/paging.js';
import { fieldsParam, parseLocationFields, parseSnapshotFields } from './telemetry.fields.js';
import { presentFeature, presentMessage, presentSnapshot } from './telemetry.presenters.js';
import {
  DeviceMessageParams, LocationList, LocationsQuery, MessageIdParams, MessageList, MessageQuery, MessageResponse,
  SnapshotList, SnapshotsQuery,
} from './telemetry.schemas.js';
import streamRoutes from './stream.routes.js';

/** Telemetry: messages, locations, snapshots of readable devices, and the live stream. */
export default async function telemetryRoutes(app: App) {
  const { repos } = app.deps;
  const config = { service: 'telemetry' as const };
  const tags = ['telemetry'];
  const readableDevice = async (request: RequestOf<{ params: typeof DeviceIdParams }>) => {
    const { deviceId } = request.params;
    await repos.devices.requireReadable(request.principal!, deviceId);
    return deviceId;
  };
  const page = (query: Query, path: string) => {
    const w = parseListWindow(query);
    const meta = (p: { remaining: number; prior: StreamCursor | null; newest: Date | null }, extra = {}) =>
      streamMeta(app.links, 'telemetry', path, w, p, extra);
    return { w, meta };
  };
  /** A message the caller may read, optionally required to belong to `deviceId`. */
  const readableMessage = async (request: FastifyRequest, messageId: string, deviceId?: string) => {
    // with a device, that device must be readable; without one, the message is looked for among the readable devices
    if (deviceId) await repos.devices.requireReadable(request.principal!, deviceId);
    const message = await repos.telemetry.getMessage(messageId, deviceId ? { deviceId } : { readableBy: request.principal! });
    if (!message) throw new NotFound();
    return { message: presentMessage(app.links, message) };
  };

  app.get('/api/v1/devices/:deviceId/messages', {
    config,
    schema: {
      tags, summary: 'Telemetry messages of a device, newest first', params: DeviceIdParams,
      querystring: Type.Object(StreamQuery), response: { 200: MessageList, ...errorResponses(404) },
    },
  }, async (request) => {
    const deviceId = await readableDevice(request);
    const { w, meta } = page(request.query, `/api/v1/devices/${deviceId}/messages`);
    const { messages, ...p } = await repos.telemetry.listMessages(deviceId, w);
    return { messages: messages.map((m) => presentMessage(app.links, m)), meta: meta(p) };
  });

  app.get('/api/v1/messages/:messageId', {
    config,
    schema: {
      tags, summary: 'One telemetry message (the target of message self links)', params: MessageIdParams,
      querystring: MessageQuery, response: { 200: MessageResponse, ...errorResponses(404) },
    },
  }, async (request) => {
    const { messageId } = request.params;
    return readableMessage(request, messageId, (request.query).deviceId);
  });

  app.get('/api/v1/devices/:deviceId/messages/:messageId', {
    config,
    schema: {
      tags, summary: 'One telemetry message of a device (the path the SDK uses)', params: DeviceMessageParams,
      response: { 200: MessageResponse, ...errorResponses(404) },
    },
  }, async (request) => {
    const { deviceId, messageId } = request.params;
    return readableMessage(request, messageId, deviceId);
  });

  app.get('/api/v1/devices/:deviceId/locations', {
    config,
    schema: {
      tags, summary: 'Locations of a device as a GeoJSON FeatureCollection, newest first', params: DeviceIdParams,
      querystring: LocationsQuery, response: { 200: LocationList, ...errorResponses(404) },
    },
  }, async (request) => {
    const deviceId = await readableDevice(request);
    const fields = parseLocationFields((request.query).fields);
    const { w, meta } = page(request.query, `/api/v1/devices/${deviceId}/locations`);
    const { locations, ...p } = await repos.telemetry.listLocations(deviceId, w, fields);
    const withFields = fields === 'all' || fields.length > 0;
    return {
      locations: { type: 'FeatureCollection' as const, features: locations.map((l) => presentFeature(l, withFields)) },
      meta: meta(p, { fields: fieldsParam(fields) }),
    };
  });

  app.get('/api/v1/devices/:deviceId/snapshots', {
    config,
    schema: {
      tags, summary: 'Snapshots of the requested parameters, only from messages holding at least one of them',
      params: DeviceIdParams, querystring: SnapshotsQuery, response: { 200: SnapshotList, ...errorResponses(404) },
    },
  }, async (request) => {
    const deviceId = await readableDevice(request);
    const fields = parseSnapshotFields((request.query).fields);
    const { w, meta } = page({ ...request.query, fields: undefined }, `/api/v1/devices/${deviceId}/snapshots`);
    const { snapshots, ...p } = await repos.telemetry.listSnapshots(deviceId, w, fields);
    return {
      snapshots: snapshots.map((s) => presentSnapshot(app.links, s)),
      meta: meta(p, { fields: fieldsParam(fields) }),
    };
  });

  await app.register(streamRoutes);
}
