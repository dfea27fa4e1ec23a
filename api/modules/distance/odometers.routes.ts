import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type, type Static } from 'typebox';
import { NotFound } from '../../../lib/errors.js';
import { errorResponses, StreamQuery, VehicleIdParams } from '../../schemas/common.js';
import { parseStreamWindow, streamMeta, type StreamParams } from '../../plugins/pagination.js';
import { currentState } from '../../../db/distance/estimate.sql.js';
import {
  CreateOdometerBody, CreateTriggerBody, OdometerIdParams, OdometerList, OdometerResponse, TriggerIdParams, TriggerList, TriggerResponse,
} from './distance.schemas.js';
import { parseReading, parseTrigger, presentOdometer, presentTrigger } from './distance.service.js';

const ListQuery = Type.Object(StreamQuery);
const Empty = Type.Null({ description: 'No content' });

/**
 * Odometer readings and triggers (spec 4.8): the calling application's own, on vehicles it can read. Create answers
 * 200 as the spec says (the SDK fixtures' 201 is also a success to the SDK); delete answers 204 (reference-notes §1.9).
 */
export default async function odometersRoutes(app: FastifyInstance) {
  const { repos, db } = app.deps;
  const config = { service: 'distance' as const };
  const readableVehicle = async (request: FastifyRequest) => {
    const { vehicleId } = request.params as { vehicleId: string };
    await repos.vehicles.requireReadable(request.principal!, vehicleId);
    return vehicleId;
  };
  const window = (request: FastifyRequest): StreamParams => parseStreamWindow(request.query as Record<string, string | undefined>);
  /** A record of the application's, on a vehicle it can still read; else 404. */
  const owned = async <T extends { vehicleId: string }>(request: FastifyRequest, record: T | undefined): Promise<T> => {
    if (!record || !(await repos.vehicles.canRead(request.principal!, record.vehicleId))) throw new NotFound();
    return record;
  };

  app.post('/api/v1/vehicles/:vehicleId/odometers', {
    config, schema: { tags: ['distance'], summary: 'Record an odometer reading (stored in meters)', params: VehicleIdParams,
      body: CreateOdometerBody, response: { 200: OdometerResponse, ...errorResponses(404, 415) } },
  }, async (request) => {
    const input = parseReading((request.body as Static<typeof CreateOdometerBody>).odometer);
    const vehicleId = await readableVehicle(request);
    const odometer = await repos.odometers.createOdometer(request.principal!.id, vehicleId, input.readingM, input.date);
    return { odometer: presentOdometer(app.links, odometer) };
  });

  app.get('/api/v1/vehicles/:vehicleId/odometers', {
    config, schema: { tags: ['distance'], summary: "The application's readings of a vehicle, newest date first", params: VehicleIdParams,
      querystring: ListQuery, response: { 200: OdometerList, ...errorResponses(404) } },
  }, async (request) => {
    const w = window(request);
    const vehicleId = await readableVehicle(request);
    const page = await repos.odometers.listOdometers(request.principal!.id, vehicleId, w);
    return {
      odometers: page.rows.map((o) => presentOdometer(app.links, o)),
      meta: streamMeta(app.links, 'distance', `/api/v1/vehicles/${vehicleId}/odometers`, w,
        { remaining: page.remaining, lastTimestamp: page.rows.at(-1)?.date ?? null }),
    };
  });

  app.get('/api/v1/odometers/:odometerId', {
    config, schema: { tags: ['distance'], summary: 'One reading', params: OdometerIdParams, response: { 200: OdometerResponse, ...errorResponses(404) } },
  }, async (request) => {
    const { odometerId } = request.params as { odometerId: string };
    return { odometer: presentOdometer(app.links, await owned(request, await repos.odometers.getOdometer(request.principal!.id, odometerId))) };
  });

  app.delete('/api/v1/odometers/:odometerId', {
    config, schema: { tags: ['distance'], summary: 'Delete a reading', params: OdometerIdParams, response: { 204: Empty, ...errorResponses(404) } },
  }, async (request, reply) => {
    const { odometerId } = request.params as { odometerId: string };
    await owned(request, await repos.odometers.getOdometer(request.principal!.id, odometerId));
    await repos.odometers.deleteOdometer(request.principal!.id, odometerId);
    return reply.code(204).send();
  });

  app.post('/api/v1/vehicles/:vehicleId/odometer_triggers', {
    config, schema: { tags: ['distance'], summary: 'Set an odometer trigger (threshold stored in meters)', params: VehicleIdParams,
      body: CreateTriggerBody, response: { 200: TriggerResponse, ...errorResponses(404, 415) } },
  }, async (request) => {
    const input = parseTrigger((request.body as Static<typeof CreateTriggerBody>).odometerTrigger);
    const vehicleId = await readableVehicle(request);
    const appId = request.principal!.id;
    const trigger = await db.knex.transaction(async (trx) => repos.odometers.createTrigger(
      appId, vehicleId, input.type, input.thresholdM, await currentState(trx, appId, vehicleId), trx));
    return { odometerTrigger: presentTrigger(app.links, trigger) };
  });

  app.get('/api/v1/vehicles/:vehicleId/odometer_triggers', {
    config, schema: { tags: ['distance'], summary: "The application's triggers on a vehicle, newest first", params: VehicleIdParams,
      querystring: ListQuery, response: { 200: TriggerList, ...errorResponses(404) } },
  }, async (request) => {
    const w = window(request);
    const vehicleId = await readableVehicle(request);
    const page = await repos.odometers.listTriggers(request.principal!.id, vehicleId, w);
    return {
      odometerTriggers: page.rows.map((t) => presentTrigger(app.links, t)),
      meta: streamMeta(app.links, 'distance', `/api/v1/vehicles/${vehicleId}/odometer_triggers`, w,
        { remaining: page.remaining, lastTimestamp: page.rows.at(-1)?.createdAt ?? null }),
    };
  });

  app.get('/api/v1/odometer_triggers/:triggerId', {
    config, schema: { tags: ['distance'], summary: 'One trigger', params: TriggerIdParams, response: { 200: TriggerResponse, ...errorResponses(404) } },
  }, async (request) => {
    const { triggerId } = request.params as { triggerId: string };
    return { odometerTrigger: presentTrigger(app.links, await owned(request, await repos.odometers.getTrigger(request.principal!.id, triggerId))) };
  });

  app.delete('/api/v1/odometer_triggers/:triggerId', {
    config, schema: { tags: ['distance'], summary: 'Delete a trigger (its events stay)', params: TriggerIdParams, response: { 204: Empty, ...errorResponses(404) } },
  }, async (request, reply) => {
    const { triggerId } = request.params as { triggerId: string };
    await owned(request, await repos.odometers.getTrigger(request.principal!.id, triggerId));
    await repos.odometers.deleteTrigger(request.principal!.id, triggerId);
    return reply.code(204).send();
  });
}
