import type { App } from '../../context.js';
import { Type } from 'typebox';
import { NotFound } from '../../../lib/errors.js';
import { errorResponses, OffsetQuery } from '../../schemas/common.js';
import { offsetMeta, parseOffsetWindow } from '../../plugins/pagination.js';
import { seedStoredRoutes } from '../../../simulator/routes-seed.js';
import { presentRoute } from './dummies.presenters.js';
import { ImportRouteBody, RouteIdParams, RouteList, RouteResponse } from './dummies.schemas.js';
import { importRoute } from './routes.service.js';

/**
 * Routes for dummies (docs/concepts/simulator.md): the stored routes of routes-data/ (seeded
 * here, idempotently, when the API starts) for every application, plus the application's imports.
 */
export default async function routesRoutes(app: App) {
  const { repos } = app.deps;
  const config = { service: 'dummy' as const };
  const tags = ['dummies'];
  await seedStoredRoutes(repos.routes);

  app.get('/api/v1/routes', {
    config,
    schema: {
      tags, summary: 'Routes a run can drive: the stored ones and those this application imported, by name',
      querystring: Type.Object(OffsetQuery), response: { 200: RouteList, ...errorResponses() },
    },
  }, async (request) => {
    const w = parseOffsetWindow(request.query);
    const { total, routes } = await repos.routes.list(request.principal!.id, w);
    return { routes: routes.map((r) => presentRoute(app.links, r)), meta: offsetMeta(app.links, 'dummy', '/api/v1/routes', { total, ...w }) };
  });

  app.get('/api/v1/routes/:routeId', {
    config,
    schema: { tags, summary: 'One route', params: RouteIdParams, response: { 200: RouteResponse, ...errorResponses(404) } },
  }, async (request) => {
    const route = await repos.routes.get(request.principal!.id, request.params.routeId);
    if (!route) throw new NotFound();
    return { route: presentRoute(app.links, route) };
  });

  app.post('/api/v1/routes', {
    config,
    schema: {
      tags, summary: 'Import a route from a GeoJSON, GPX or encoded-polyline file (an addition to the original platform\'s API)',
      body: ImportRouteBody, response: { 201: RouteResponse, ...errorResponses(409, 413, 415) },
    },
  }, async (request, reply) => {
    const route = await importRoute(repos, request.principal!, request.body.route);
    const body = { route: presentRoute(app.links, route) };
    reply.code(201).header('Location', body.route.links.self);
    return body;
  });
}
