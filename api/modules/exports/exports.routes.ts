import type { Readable } from 'node:stream';
import type { FastifyReply } from 'fastify';
import type { App } from '../../context.js';
import { NotFound } from '../../../lib/errors.js';
import type { Principal } from '../../../db/index.js';
import { EXPORT_PAGE_ROWS, type CsvChunk, type ExportCursor, type ExportRange, type ExportRow, type ExportSource } from '../../../db/repositories/exports.repository.js';
import { DeviceIdParams, errorResponses, VehicleIdParams } from '../../schemas/common.js';
import { presentMessage } from '../telemetry/telemetry.presenters.js';
import { readableRecentDevices } from '../trips/trips.service.js';
import { csvColumns, csvChunkWriter, FORMAT_SHAPES, geojsonWriter, gpxWriter, ndjsonWriter, type ExportWriter } from './exports.formats.js';
import { ExportHead, MessagesExportBody, MessagesExportQuery, TripExportBody, TripExportQuery, TripIdParams } from './exports.schemas.js';
import { attachment, exportStream, MESSAGE_FORMATS, messagePages, parseFormat, ROWS_PER_CHUNK, parseRange, TRIP_FORMATS } from './exports.service.js';

/** What one export reads and how it writes it: `body` reads the first page, then streams the rest. */
interface Plan {
  source: ExportSource;
  range: ExportRange;
  body(): Promise<Readable>;
  /** The file name's parts: `<kind>-<id>[-from-<since>][-to-<until>].<extension>`. */
  file: { kind: string; id: string; since?: Date; until?: Date };
  extension: string;
  contentType: string;
}

/**
 * Exports (docs/concepts/exports.md): a device's or a vehicle's messages as CSV, NDJSON or GPX, a trip's track as
 * GPX or GeoJSON, streamed a keyset page at a time. Each GET has a HEAD with the same checks and headers and
 * X-Total-Count (what a progress bar needs). The message exports belong to the telemetry service, the trip's to trips.
 */
export default async function exportsRoutes(app: App) {
  const { repos } = app.deps;
  const telemetry = { service: 'telemetry' as const };
  const trip = { service: 'trip' as const };
  const tags = ['exports'];

  const headers = (reply: FastifyReply, p: Plan) => reply.type(p.contentType)
    .header('content-disposition', attachment(p.file.kind, p.file.id, p.extension, p.file))
    .header('x-content-type-options', 'nosniff');
  const send = async (reply: FastifyReply, p: Plan) => headers(reply, p).send(await p.body());
  /** Messages written from ExportRows; `writer` sees the first page (GeoJSON needs to know if it has 2 points). */
  const messagesBody = (source: ExportSource, range: ExportRange, writer: (first: ExportRow[]) => ExportWriter | Promise<ExportWriter>) =>
    async () => {
      const first = await repos.exports.page(source, range, null);
      return exportStream(await writer(first), messagePages(first, (after) => repos.exports.page(source, range, after)));
    };
  /** CSV records PostgreSQL writes (db/export-csv.sql.ts) of the columns present in the range. */
  const csvBody = (source: ExportSource, range: ExportRange, withDevice: boolean) => async () => {
    const columns = csvColumns(await repos.exports.keys(source, range), withDevice);
    const cells = columns.map((c) => c.source);
    const page = (after: ExportCursor | null) => repos.exports.csvPage(source, range, after, cells, { chunkRows: ROWS_PER_CHUNK });
    // a page may have a next one when it is full: its chunks hold EXPORT_PAGE_ROWS records
    const last = (chunks: CsvChunk[]) => (chunks.reduce((n, c) => n + c.rows, 0) >= EXPORT_PAGE_ROWS ? chunks[chunks.length - 1].last : null);
    return exportStream(csvChunkWriter(columns), { first: await page(null), next: page, last, perChunk: 1 });
  };
  const head = async (reply: FastifyReply, p: Plan) => {
    const n = await repos.exports.count(p.source, p.range);
    return headers(reply, p).header('x-total-count', String(n)).send();
  };

  /** A device's or vehicle's messages in the query's range and format. */
  const messagesPlan = async (q: { since?: string; until?: string; format?: string }, kind: 'device' | 'vehicle', id: string,
    source: () => Promise<ExportSource>): Promise<Plan> => {
    // the query's 400s come before the 404 of a record the caller cannot read, as in every list
    const format = parseFormat(q.format, MESSAGE_FORMATS);
    const { untilGiven, ...window } = parseRange(q);
    const s = await source();
    const range: ExportRange = { ...window, located: format === 'gpx' };
    const body = format === 'csv' ? csvBody(s, range, kind === 'vehicle')
      : messagesBody(s, range, () => (format === 'ndjson' ? ndjsonWriter((m) => presentMessage(app.links, m)) : gpxWriter(`drivewire ${kind} ${id}`)));
    const file = { kind, id, since: window.since, until: untilGiven ? window.until : undefined };
    return { source: s, range, body, file, ...FORMAT_SHAPES[format] };
  };
  const deviceSource = (principal: Principal, deviceId: string) => async () => {
    await repos.devices.requireReadable(principal, deviceId);
    return { deviceId };
  };
  const vehicleSource = (principal: Principal, vehicleId: string) => async () =>
    ({ vehicleId, deviceIds: await readableRecentDevices(repos, principal, vehicleId) });

  const tripPlan = async (principal: Principal, tripId: string, q: { format?: string }): Promise<Plan> => {
    const format = parseFormat(q.format, TRIP_FORMATS);
    const t = await repos.trips.get(principal, tripId);
    if (!t) throw new NotFound();
    // a trip's messages: its device's from its start to its stop (open: its newest message), as its links give them
    const range: ExportRange = { since: new Date(t.start.getTime() - 1), until: t.stop ?? t.lastTs, located: true };
    const source = { deviceId: t.deviceId };
    const body = messagesBody(source, range, (first) => (format === 'gpx' ? gpxWriter(`drivewire trip ${t.id}`)
      : geojsonWriter(t.id, {
        id: t.id, deviceId: t.deviceId, vehicleId: t.vehicleId, start: t.start.toISOString(), stop: t.stop?.toISOString() ?? null,
        status: t.stop ? 'completed' : 'started', ...t.stats,
      }, first.length)));
    return { source, range, body, file: { kind: 'trip', id: t.id }, ...FORMAT_SHAPES[format] };
  };

  for (const method of ['GET', 'HEAD'] as const) {
    const isHead = method === 'HEAD';
    const answer = (reply: FastifyReply, p: Plan) => (isHead ? head(reply, p) : send(reply, p));
    const response = (body: object) => ({ 200: isHead ? ExportHead : body, ...errorResponses(404) });
    // the OpenAPI document leaves HEAD routes out unless told: these say what the CLI's progress bar reads
    const config = (c: { service: 'telemetry' | 'trip' }) => (isHead ? { ...c, swagger: { exposeHeadRoute: true } } : c);
    app.route({
      method, url: '/api/v1/devices/:deviceId/messages/export', config: config(telemetry), exposeHeadRoute: false,
      schema: { tags, summary: `${isHead ? 'Headers and row count of' : 'Streams'} a device's messages as CSV, NDJSON or GPX, oldest first`,
        params: DeviceIdParams, querystring: MessagesExportQuery, response: response(MessagesExportBody) },
      handler: async (request, reply) => {
        const { deviceId } = request.params;
        return answer(reply, await messagesPlan(request.query, 'device', deviceId, deviceSource(request.principal!, deviceId)));
      },
    });
    app.route({
      method, url: '/api/v1/vehicles/:vehicleId/messages/export', config: config(telemetry), exposeHeadRoute: false,
      schema: { tags, summary: `${isHead ? 'Headers and row count of' : 'Streams'} a vehicle's messages from the 20 most recent devices in it `
        + 'that the application can read, each while it was in the vehicle', params: VehicleIdParams, querystring: MessagesExportQuery,
      response: response(MessagesExportBody) },
      handler: async (request, reply) => {
        const { vehicleId } = request.params;
        return answer(reply, await messagesPlan(request.query, 'vehicle', vehicleId, vehicleSource(request.principal!, vehicleId)));
      },
    });
    app.route({
      method, url: '/api/v1/trips/:tripId/export', config: config(trip), exposeHeadRoute: false,
      schema: { tags, summary: `${isHead ? 'Headers and point count of' : 'Streams'} a trip's track as GPX or GeoJSON`,
        params: TripIdParams, querystring: TripExportQuery, response: response(TripExportBody) },
      handler: async (request, reply) => answer(reply, await tripPlan(request.principal!, request.params.tripId, request.query)),
    });
  }
}

