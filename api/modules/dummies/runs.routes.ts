import type { App, RequestOf } from '../../context.js';
import { Type } from 'typebox';
import { NotFound } from '../../../lib/errors.js';
import { errorResponses, NoContent, OffsetQuery } from '../../schemas/common.js';
import { offsetMeta, parseOffsetWindow } from '../../plugins/pagination.js';
import { presentRun } from './dummies.presenters.js';
import { CurrentRunResponse, DummyIdParams, RunIdParams, RunList, RunResponse, StartRunBody } from './dummies.schemas.js';
import { mustDummy, startRun } from './dummies.service.js';

/**
 * Runs (docs/concepts/simulator.md): one current run per dummy, driven by the run scheduler
 * of the workers; finished runs stay readable by id and in the dummy's run list.
 */
export default async function runsRoutes(app: App) {
  const { repos } = app.deps;
  const config = { service: 'dummy' as const };
  const tags = ['dummies'];
  const dummyOf = (request: RequestOf<{ params: typeof DummyIdParams }>) =>
    mustDummy(app.deps, request.principal!, request.params.dummyId);

  app.post('/api/v1/dummies/:dummyId/runs', {
    config,
    schema: {
      tags, summary: 'Send the dummy along a route', params: DummyIdParams, body: StartRunBody,
      response: { 201: RunResponse, ...errorResponses(404, 409, 415) },
    },
  }, async (request, reply) => {
    const { dummyId } = request.params;
    const run = await startRun(app.deps, request.principal!, dummyId, request.body.run);
    const body = { run: presentRun(app.links, run) };
    reply.code(201).header('Location', body.run.links.self);
    return body;
  });

  app.get('/api/v1/dummies/:dummyId/runs/_current', {
    config,
    schema: {
      tags, summary: 'The current run with its live status; run is null when there is none', params: DummyIdParams,
      response: { 200: CurrentRunResponse, ...errorResponses(404) },
    },
  }, async (request) => {
    const dummy = await dummyOf(request);
    const run = await repos.runs.current(dummy.id);
    return { run: run ? presentRun(app.links, run) : null };
  });

  app.delete('/api/v1/dummies/:dummyId/runs/_current', {
    config,
    schema: {
      tags, summary: 'Stop the current run: 202 while it stops (about a second), 204 when there was none',
      params: DummyIdParams,
      response: { 202: RunResponse, 204: NoContent('No current run'), ...errorResponses(404) },
    },
  }, async (request, reply) => {
    const dummy = await dummyOf(request);
    const run = await repos.runs.requestStop(dummy.id);
    if (!run) return reply.code(204).send();
    reply.code(202);
    return { run: presentRun(app.links, run) };
  });

  app.get('/api/v1/dummies/:dummyId/runs', {
    config,
    schema: {
      tags, summary: "The dummy's runs, newest first, finished ones included", params: DummyIdParams,
      querystring: Type.Object(OffsetQuery), response: { 200: RunList, ...errorResponses(404) },
    },
  }, async (request) => {
    const dummy = await dummyOf(request);
    const w = parseOffsetWindow(request.query);
    const { total, runs } = await repos.runs.list(dummy.id, w);
    return {
      runs: runs.map((r) => presentRun(app.links, r)),
      meta: offsetMeta(app.links, 'dummy', `/api/v1/dummies/${dummy.id}/runs`, { total, ...w }),
    };
  });

  app.get('/api/v1/dummies/:dummyId/runs/:runId', {
    config,
    schema: { tags, summary: 'One run of the dummy, active or finished', params: RunIdParams, response: { 200: RunResponse, ...errorResponses(404) } },
  }, async (request) => {
    const dummy = await dummyOf(request);
    const run = await repos.runs.get(dummy.id, request.params.runId);
    if (!run) throw new NotFound('Run not found');
    return { run: presentRun(app.links, run) };
  });
}
