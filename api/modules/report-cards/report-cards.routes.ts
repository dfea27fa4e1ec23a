import { Type, type TSchema } from 'typebox';
import { NotFound } from '../../../lib/errors.js';
import type { App, LinkBuilder } from '../../context.js';
import type { ReportCard } from '../../../db/trips/trips.repository.js';
import { GRADES, overallGrade, type Grade } from '../../../db/trips/formulas.js';
import { DeviceIdParams, errorResponses, StreamQuery, VehicleIdParams } from '../../schemas/common.js';
import { parseListWindow, streamList } from '../../plugins/pagination.js';
import { TripIdParams } from '../trips/trips.schemas.js';
import { readableRecentDevices } from '../trips/trips.service.js';
import { OverallQuery, OverallResponse, ReportCardIdParams, ReportCardList, ReportCardResponse } from './report-cards.schemas.js';

export function presentReportCard(links: LinkBuilder, c: ReportCard) {
  const out: Record<string, string> = {
    self: links.url('behavioral', `/api/v1/report_cards/${c.id}`), trip: links.url('trip', `/api/v1/trips/${c.tripId}`),
    device: links.url('platform', `/api/v1/devices/${c.deviceId}`),
  };
  if (c.vehicleId) out.vehicle = links.url('platform', `/api/v1/vehicles/${c.vehicleId}`);
  return { id: c.id, deviceId: c.deviceId, vehicleId: c.vehicleId, tripId: c.tripId, grade: c.grade, score: c.score, links: out };
}

const ListQuery = Type.Object(StreamQuery);

/** Report cards (docs/concepts/trips-and-report-cards.md): one per completed trip; lists of a device or vehicle, overall, a trip's, by id. */
export default async function reportCardsRoutes(app: App) {
  const { repos } = app.deps;
  const config = { service: 'behavioral' as const };
  const cards = {
    service: 'behavioral', key: 'reportCards', present: (c: ReportCard) => presentReportCard(app.links, c),
  } as const;
  const schema = <P extends TSchema, Q extends TSchema, R extends TSchema>(summary: string, params: P, querystring: Q, ok: R) =>
    ({ tags: ['report cards'], summary, params, querystring, response: { 200: ok, ...errorResponses(404) } });

  app.get('/api/v1/devices/:deviceId/report_cards', { config, schema: schema("A device's report cards, newest first", DeviceIdParams, ListQuery, ReportCardList) },
    async (request) => {
      const { deviceId } = request.params;
      return streamList(app.links, request.query, {
        ...cards, path: `/api/v1/devices/${deviceId}/report_cards`,
        check: () => repos.devices.requireReadable(request.principal!, deviceId),
        load: (w) => repos.trips.cardsForDevice(request.principal!, deviceId, w),
      });
    });

  app.get('/api/v1/vehicles/:vehicleId/report_cards', { config, schema: schema("A vehicle's report cards from the devices the application can read", VehicleIdParams, ListQuery, ReportCardList) },
    async (request) => {
      const { vehicleId } = request.params;
      return streamList(app.links, request.query, {
        ...cards, path: `/api/v1/vehicles/${vehicleId}/report_cards`,
        check: () => readableRecentDevices(repos, request.principal!, vehicleId),
        load: (w, devices) => repos.trips.cardsForVehicle(request.principal!, vehicleId, devices, w),
      });
    });

  app.get('/api/v1/devices/:deviceId/report_cards/overall', { config, schema: schema('Overall grade of a device over a time segment', DeviceIdParams, OverallQuery, OverallResponse) },
    async (request) => {
      const { deviceId } = request.params;
      const w = parseListWindow(request.query);
      await repos.devices.requireReadable(request.principal!, deviceId);
      const { lifetime, inWindow } = await repos.trips.gradeCounts(request.principal!, deviceId, w);
      const tripSampleSize = GRADES.reduce((n, g) => n + (inWindow[g] ?? 0), 0);
      const count = (g: Grade) => String(lifetime[g] ?? 0);
      const gradeCount = { A: count('A'), B: count('B'), C: count('C'), D: count('D'), F: count('F'), I: count('I') };
      return { reportCard: { overallGrade: overallGrade(inWindow) }, tripSampleSize, gradeCount };
    });

  app.get('/api/v1/trips/:tripId/report_cards/_current', { config, schema: schema("A trip's report card (404 while the trip is open)", TripIdParams, Type.Object({}), ReportCardResponse) },
    async (request) => {
      const card = await repos.trips.cardOfTrip(request.principal!, request.params.tripId);
      if (!card) throw new NotFound();
      return { reportCard: presentReportCard(app.links, card) };
    });

  app.get('/api/v1/report_cards/:reportCardId', { config, schema: schema('One report card', ReportCardIdParams, Type.Object({}), ReportCardResponse) },
    async (request) => {
      const card = await repos.trips.card(request.principal!, request.params.reportCardId);
      if (!card) throw new NotFound();
      return { reportCard: presentReportCard(app.links, card) };
    });
}
