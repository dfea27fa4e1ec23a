import { Type, type TObject, type TSchema, type TString } from 'typebox';
import { NotFound } from '../../../lib/errors.js';
import type { App, LinkBuilder, RequestOf } from '../../context.js';
import { errorResponses, NoContent, StreamQuery, VehicleIdParams } from '../../schemas/common.js';
import { streamList, type ListPage, type StreamParams } from '../../plugins/pagination.js';
import { currentState } from '../../../db/distance/estimate.sql.js';
import type { StreamCursor } from '../../../db/paging.js';
import { vehicleNow } from '../../../db/vehicle-clock.js';
import {
  CreateOdometerBody, CreateTriggerBody, OdometerIdParams, OdometerList, OdometerResponse, TriggerIdParams, TriggerList, TriggerResponse,
} from './distance.schemas.js';
import { checkMonotonic, datedReading, parseReading, parseTrigger, presentOdometer, presentTrigger } from './distance.service.js';

const ListQuery = Type.Object(StreamQuery);
const Empty = NoContent('No content');
const config = { service: 'distance' as const };
const tags = ['distance'];

/** What readings and triggers share: the application's own, listed per vehicle, read and deleted by id. */
interface RecordKind<K extends string, T extends { id: string; vehicleId: string }> {
  /** The path segment: `/vehicles/:vehicleId/<segment>` lists them, `/<segment>/:<idParam>` is one. */
  segment: string;
  idParam: string;
  /** The answer's field for one record, and for a list. */
  one: string;
  many: K;
  present: (links: LinkBuilder, record: T) => unknown;
  /** `params` has the one path parameter `idParam`. */
  schemas: { params: TObject<Record<string, TString>>; one: TSchema; list: TSchema };
  summaries: { list: string; get: string; delete: string };
}

/** Where a kind of record is kept (the odometers repository's functions for it). */
interface RecordStore<T> {
  list: (appId: string, vehicleId: string, w: StreamParams) => Promise<{ remaining: number; prior: StreamCursor | null; newest?: Date | null; rows: T[] }>;
  get: (appId: string, id: string) => Promise<T | undefined>;
  delete: (appId: string, id: string) => Promise<boolean>;
}

const READINGS = {
  segment: 'odometers', idParam: 'odometerId', one: 'odometer', many: 'odometers', present: presentOdometer,
  schemas: { params: OdometerIdParams, one: OdometerResponse, list: OdometerList },
  summaries: { list: "The application's readings of a vehicle, newest date first", get: 'One reading', delete: 'Delete a reading' },
} as const;

const TRIGGERS = {
  segment: 'odometer_triggers', idParam: 'triggerId', one: 'odometerTrigger', many: 'odometerTriggers', present: presentTrigger,
  schemas: { params: TriggerIdParams, one: TriggerResponse, list: TriggerList },
  summaries: { list: "The application's triggers on a vehicle, newest first", get: 'One trigger', delete: 'Delete a trigger (its events stay)' },
} as const;

/** The list, get and delete routes of one kind of record. */
function appRecordRoutes<K extends string, T extends { id: string; vehicleId: string }>(
  app: App, kind: RecordKind<K, T>, store: RecordStore<T>,
) {
  const { repos } = app.deps;
  const onePath = `/api/v1/${kind.segment}/:${kind.idParam}`;
  /** The record named in the path: the application's, on a vehicle it can still read; else 404. */
  const owned = async (request: RequestOf<{ params: TObject<Record<string, TString>> }>) => {
    const id = request.params[kind.idParam];
    const record = await store.get(request.principal!.id, id);
    if (!record || !(await repos.vehicles.canRead(request.principal!, record.vehicleId))) throw new NotFound();
    return record;
  };

  app.get(`/api/v1/vehicles/:vehicleId/${kind.segment}`, {
    config, schema: { tags, summary: kind.summaries.list, params: VehicleIdParams, querystring: ListQuery,
      response: { 200: kind.schemas.list, ...errorResponses(404) } },
  }, async (request) => {
    const { vehicleId } = request.params;
    return streamList(app.links, request.query, {
      service: 'distance', key: kind.many, path: `/api/v1/vehicles/${vehicleId}/${kind.segment}`,
      present: (r: T) => kind.present(app.links, r),
      check: () => repos.vehicles.requireReadable(request.principal!, vehicleId),
      load: async (w) => {
        const { rows, ...page } = await store.list(request.principal!.id, vehicleId, w);
        return { ...page, [kind.many]: rows } as ListPage<K, T>;
      },
    });
  });

  app.get(onePath, {
    config, schema: { tags, summary: kind.summaries.get, params: kind.schemas.params, response: { 200: kind.schemas.one, ...errorResponses(404) } },
  }, async (request) => ({ [kind.one]: kind.present(app.links, await owned(request)) }));

  app.delete(onePath, {
    config, schema: { tags, summary: kind.summaries.delete, params: kind.schemas.params, response: { 204: Empty, ...errorResponses(404) } },
  }, async (request, reply) => {
    const record = await owned(request);
    await store.delete(request.principal!.id, record.id);
    return reply.code(204).send();
  });
}

/**
 * Odometer readings and triggers (docs/concepts/distance-and-odometers.md): the calling application's own, on vehicles
 * it can read. Create answers 200 as the original platform does (the SDK fixtures' 201 is also a success to the SDK);
 * delete answers 204.
 */
export default async function odometersRoutes(app: App) {
  const { repos, db } = app.deps;
  const readableVehicle = async (request: RequestOf<{ params: typeof VehicleIdParams }>) => {
    const { vehicleId } = request.params;
    await repos.vehicles.requireReadable(request.principal!, vehicleId);
    return vehicleId;
  };

  app.post('/api/v1/vehicles/:vehicleId/odometers', {
    config, schema: { tags, summary: 'Record an odometer reading (stored in meters)', params: VehicleIdParams,
      body: CreateOdometerBody, response: { 200: OdometerResponse, ...errorResponses(404, 415) } },
  }, async (request) => {
    const parsed = parseReading(request.body.odometer);
    const vehicleId = await readableVehicle(request);
    const input = datedReading(parsed, await vehicleNow(db.knex, vehicleId));
    const appId = request.principal!.id;
    const odometer = await db.knex.transaction(async (trx) => {
      if (!input.allowDecrease) checkMonotonic(input, await repos.odometers.conflictingReading(appId, vehicleId, input.readingM, input.date, trx));
      return repos.odometers.createOdometer(appId, vehicleId, input.readingM, input.date, trx);
    });
    return { odometer: presentOdometer(app.links, odometer) };
  });

  appRecordRoutes(app, READINGS, { list: repos.odometers.listOdometers, get: repos.odometers.getOdometer, delete: repos.odometers.deleteOdometer });

  app.post('/api/v1/vehicles/:vehicleId/odometer_triggers', {
    config, schema: { tags, summary: 'Set an odometer trigger (threshold stored in meters)', params: VehicleIdParams,
      body: CreateTriggerBody, response: { 200: TriggerResponse, ...errorResponses(404, 415) } },
  }, async (request) => {
    const input = parseTrigger(request.body.odometerTrigger);
    const vehicleId = await readableVehicle(request);
    const appId = request.principal!.id;
    const trigger = await db.knex.transaction(async (trx) => repos.odometers.createTrigger(
      appId, vehicleId, input.type, input.thresholdM, await currentState(trx, appId, vehicleId, await vehicleNow(trx, vehicleId)), trx));
    return { odometerTrigger: presentTrigger(app.links, trigger) };
  });

  appRecordRoutes(app, TRIGGERS, { list: repos.odometers.listTriggers, get: repos.odometers.getTrigger, delete: repos.odometers.deleteTrigger });
}
