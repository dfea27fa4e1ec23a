import type { App } from '../../context.js';
import { Type } from 'typebox';
import { errorResponses, NoContent, OffsetQuery } from '../../schemas/common.js';
import { offsetMeta, parseOffsetWindow } from '../../plugins/pagination.js';
import { presentDummy } from './dummies.presenters.js';
import { CreateDummyBody, DummyIdParams, DummyList, DummyResponse } from './dummies.schemas.js';
import { createDummy, deleteDummy, mustDummy } from './dummies.service.js';
import routesRoutes from './routes.routes.js';
import runsRoutes from './runs.routes.js';

/** Dummies (docs/concepts/simulator.md): simulated devices of the calling application; with routes and runs. */
export default async function dummiesRoutes(app: App) {
  const { repos } = app.deps;
  const config = { service: 'dummy' as const };
  const tags = ['dummies'];

  app.post('/api/v1/dummies', {
    config,
    schema: {
      tags, summary: 'Create a dummy: a real device, authorized for (and, Enterprise, registered with) this application',
      body: CreateDummyBody, response: { 201: DummyResponse, ...errorResponses(409, 415) },
    },
  }, async (request, reply) => {
    const dummy = await createDummy(app.deps, request.principal!, request.body.dummy.name);
    const body = { dummy: presentDummy(app.links, dummy) };
    reply.code(201).header('Location', body.dummy.links.self);
    return body;
  });

  app.get('/api/v1/dummies', {
    config,
    schema: {
      tags, summary: 'Dummies of this application, in the order they were created',
      querystring: Type.Object(OffsetQuery), response: { 200: DummyList, ...errorResponses() },
    },
  }, async (request) => {
    const w = parseOffsetWindow(request.query);
    const { total, dummies } = await repos.dummies.list(request.principal!.id, w);
    return { dummies: dummies.map((d) => presentDummy(app.links, d)), meta: offsetMeta(app.links, 'dummy', '/api/v1/dummies', { total, ...w }) };
  });

  app.get('/api/v1/dummies/:dummyId', {
    config,
    schema: { tags, summary: 'One dummy', params: DummyIdParams, response: { 200: DummyResponse, ...errorResponses(404) } },
  }, async (request) => ({ dummy: presentDummy(app.links, await mustDummy(app.deps, request.principal!, request.params.dummyId)) }));

  app.delete('/api/v1/dummies/:dummyId', {
    config,
    schema: {
      tags, summary: 'Delete a dummy: its run stops; the application loses its device, which cannot be reclaimed',
      params: DummyIdParams, response: { 204: NoContent('Deleted'), ...errorResponses(404) },
    },
  }, async (request, reply) => {
    await deleteDummy(app.deps, request.principal!, request.params.dummyId);
    return reply.code(204).send();
  });

  await app.register(routesRoutes);
  await app.register(runsRoutes);
}
