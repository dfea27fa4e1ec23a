import type { TSchema } from 'typebox';
import type { App, RequestOf } from '../../context.js';
import { errorResponses, VehicleIdParams } from '../../schemas/common.js';
import { parseStreamWindow } from '../../plugins/pagination.js';
import { estimates, latestEstimate, type Estimate } from '../../../db/distance/estimate.sql.js';
import { vehicleNow } from '../../../db/vehicle-clock.js';
import { DistanceList, DistanceQuery, DistanceResponse } from './distance.schemas.js';
import { presentDistance, unitFromHeaders } from './distance.service.js';
import odometersRoutes from './odometers.routes.js';

/** The narrowest interval: with one reading, the latest; it matters when readings disagree. */
const best = (list: Estimate[]) => list.reduce((a, b) => (b.confidenceMaxM - b.confidenceMinM < a.confidenceMaxM - a.confidenceMinM ? b : a));

/**
 * Distance (docs/concepts/distance-and-odometers.md): the odometer estimate at `until` (default now: the vehicle's clock) from the application's
 * latest reading dated in (since, until], plus the vehicle's distance since, never less than the estimate before that
 * reading (latestEstimate, so that it never decreases over time); `distances` lists the estimate from each
 * such reading, `_best` the narrowest. Without a reading: what the platform saw (`basis: observed`), never an error.
 */
export default async function distanceRoutes(app: App) {
  const { repos, db } = app.deps;
  const config = { service: 'distance' as const };
  const schema = <R extends TSchema>(summary: string, response: R) => ({
    tags: ['distance'], summary, params: VehicleIdParams, querystring: DistanceQuery, response: { 200: response, ...errorResponses(404) },
  });

  async function load(request: RequestOf<{ params: typeof VehicleIdParams; querystring: typeof DistanceQuery }>, defaultLimit: number,
    latest = false) {
    const { vehicleId } = request.params;
    const q = request.query;
    const w = parseStreamWindow({ ...q, limit: q.limit ?? String(defaultLimit) });
    const unit = unitFromHeaders(request.headers);
    await repos.vehicles.requireReadable(request.principal!, vehicleId);
    // "Now" is the vehicle's clock: a dummy's run stamps ahead of the wall clock (db/vehicle-clock.ts).
    if (q.until === undefined) w.until = await vehicleNow(db.knex, vehicleId, w.until);
    const list = latest ? [await latestEstimate(db.knex, request.principal!.id, vehicleId, w)]
      : await estimates(db.knex, request.principal!.id, vehicleId, w);
    const self = (name: string) => app.links.url('distance', `/api/v1/vehicles/${vehicleId}/distances${name ? `/${name}` : ''}`, {
      since: w.since?.getTime().toString(), until: w.until.getTime().toString(),
    });
    const present = (e: Estimate, name: string) => presentDistance(app.links, vehicleId, e, unit, self(name));
    return { list, present };
  }

  app.get('/api/v1/vehicles/:vehicleId/distances/_latest', {
    config, schema: schema("The vehicle's odometer estimate from the latest reading", DistanceResponse),
  }, async (request) => {
    const { list, present } = await load(request, 1, true);
    return { distance: present(list[0], '_latest') };
  });

  app.get('/api/v1/vehicles/:vehicleId/distances/_best', {
    config, schema: schema('The estimate with the narrowest confidence interval', DistanceResponse),
  }, async (request) => {
    const { list, present } = await load(request, 100);
    return { distance: present(best(list), '_best') };
  });

  app.get('/api/v1/vehicles/:vehicleId/distances', {
    config, schema: schema('The estimate from each reading, newest reading first', DistanceList),
  }, async (request) => {
    const { list, present } = await load(request, 20);
    return { distances: list.map((e) => present(e, '')) };
  });

  await odometersRoutes(app);
}
