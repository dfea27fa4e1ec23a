import type { App } from '../../context.js';
import { NotFound, ValidationError } from '../../../lib/errors.js';
import type { CodeState, DtcOccurrence } from '../../../db/repositories/diagnostics.repository.js';
import { batteryStatus } from '../../../db/diagnostics/battery.js';
import { errorResponses, VehicleIdParams } from '../../schemas/common.js';
import { streamList } from '../../plugins/pagination.js';
import { presentCode, presentOccurrence } from './diagnostics.presenters.js';
import { BatteryResponse, CodeIdParams, CodeList, CodeListQuery, CodeResponse } from './diagnostics.schemas.js';

const STATES: CodeState[] = ['active', 'inactive', 'all'];

/** `state`: empty counts as absent, as in the other lists' filters; anything else outside the list is a 400. */
function parseState(raw: string | undefined): CodeState {
  const v = raw?.trim();
  if (v === undefined || v === '') return 'all';
  if (!STATES.includes(v as CodeState)) throw new ValidationError(`state must be one of ${STATES.join(', ')}; got "${v.slice(0, 40)}"`);
  return v as CodeState;
}

/** Diagnostics (docs/concepts/diagnostics-and-collisions.md): a vehicle's trouble codes, one trouble-code record, the current battery status. */
export default async function diagnosticsRoutes(app: App) {
  const { repos, config } = app.deps;
  const service = { service: 'diagnostic' as const };

  app.get('/api/v1/vehicles/:vehicleId/codes', {
    config: service,
    schema: {
      tags: ['diagnostics'], summary: "A vehicle's trouble-code occurrences, newest first", params: VehicleIdParams,
      querystring: CodeListQuery, response: { 200: CodeList, ...errorResponses(404) },
    },
  }, async (request) => {
    const { vehicleId } = request.params;
    return streamList(app.links, request.query, {
      service: 'diagnostic', key: 'codes' as const, path: `/api/v1/vehicles/${vehicleId}/codes`,
      present: (o: DtcOccurrence) => presentOccurrence(app.links, o),
      check: async (q) => {
        const state = parseState(q.state);
        await repos.vehicles.requireReadable(request.principal!, vehicleId);
        return state;
      },
      load: (w, state) => repos.diagnostics.listForVehicle(request.principal!, vehicleId, state, w),
      keep: (q) => ({ state: q.state?.trim() || undefined }),
    });
  });

  app.get('/api/v1/codes/:codeId', {
    config: service,
    schema: { tags: ['diagnostics'], summary: 'One trouble-code record', params: CodeIdParams, response: { 200: CodeResponse, ...errorResponses(404) } },
  }, async (request) => {
    const code = await repos.diagnostics.getCode(request.params.codeId);
    if (!code) throw new NotFound();
    return { code: presentCode(app.links, code) };
  });

  app.get('/api/v1/vehicles/:vehicleId/battery_statuses/_current', {
    config: service,
    schema: {
      tags: ['diagnostics'], summary: "The vehicle's current battery status (null when there is no recent reading)",
      params: VehicleIdParams, response: { 200: BatteryResponse, ...errorResponses(404) },
    },
  }, async (request) => {
    const { vehicleId } = request.params;
    await repos.vehicles.requireReadable(request.principal!, vehicleId);
    const readings = await repos.diagnostics.latestReadings(request.principal!, vehicleId);
    const s = batteryStatus(readings, new Date(), config.batteryRecentHours * 3_600_000);
    return { batteryStatus: { status: s.status, timestamp: s.timestamp ? s.timestamp.toISOString() : null } };
  });
}
