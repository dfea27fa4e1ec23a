import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';

/** Unauthenticated system routes: the OpenAPI document, health and metrics. */
export default async function systemRoutes(app: FastifyInstance) {
  app.get('/api/v1/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  app.get('/health', {
    schema: {
      tags: ['system'], summary: 'Database and in-process parts up',
      response: { 200: Type.Object({ status: Type.String(), checks: Type.Record(Type.String(), Type.Boolean()) }),
        503: Type.Object({ status: Type.String(), checks: Type.Record(Type.String(), Type.Boolean()) }) },
    },
  }, async (_request, reply) => {
    const checks: Record<string, boolean> = {};
    try { await app.deps.db.knex.raw('select 1'); checks.database = true; } catch { checks.database = false; }
    Object.assign(checks, (await app.deps.live?.health?.()) ?? {});
    const ok = Object.values(checks).every(Boolean);
    reply.code(ok ? 200 : 503);
    return { status: ok ? 'ok' : 'degraded', checks };
  });

  app.get('/metrics', { schema: { tags: ['system'], summary: 'Prometheus metrics' } }, async (_request, reply) => {
    reply.type('text/plain; version=0.0.4');
    return (await app.deps.live?.metrics?.()) ?? '';
  });
}
