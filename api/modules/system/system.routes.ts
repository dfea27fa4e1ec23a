import type { App } from '../../context.js';
import { Type } from 'typebox';
import { boundedWork, withAcquireLimit } from '../../../db/acquire-limit.js';

/**
 * /health answers within this budget, whatever the database does: a check that has
 * not answered by then counts as down and is named in `slow`. Under a second, so a load balancer's
 * probe with a 1 s timeout still gets an answer.
 */
export const HEALTH_BUDGET_MS = 800;

/** Unauthenticated system routes: the OpenAPI document, health and metrics. */
export default async function systemRoutes(app: App) {
  app.get('/api/v1/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  const Health = Type.Object({
    status: Type.String({ description: '`ok`, or `degraded` when a check failed or did not answer in time' }),
    checks: Type.Record(Type.String(), Type.Boolean(), { description: 'Each part: up (true) or down/slow (false)' }),
    slow: Type.Optional(Type.Array(Type.String(), { description: `Checks that gave no answer within ${HEALTH_BUDGET_MS} ms` })),
    message: Type.Optional(Type.String({ description: 'What is down or slow, in words' })),
  });
  app.get('/health', {
    schema: { tags: ['system'], summary: `Database and in-process parts up; answers within ${HEALTH_BUDGET_MS} ms`, response: { 200: Health, 503: Health } },
  }, async (_request, reply) => {
    const health = await checkHealth(app);
    reply.code(health.status === 'ok' ? 200 : 503);
    return health;
  });

  app.get('/metrics', { schema: { tags: ['system'], summary: 'Prometheus metrics' } }, async (_request, reply) => {
    reply.type('text/plain; version=0.0.4');
    return (await app.deps.live?.metrics?.()) ?? '';
  });
}

/**
 * Runs the checks concurrently, each bounded by HEALTH_BUDGET_MS (its connection wait included: the
 * pool wait is given up a little later, so a saturated pool reads as slow, not failed).
 */
async function checkHealth(app: App) {
  const checks: Record<string, boolean> = {};
  const slow: string[] = [];
  const database = probeDatabase(app).then(() => ({ database: true }));
  const live = app.deps.live?.health?.() ?? Promise.resolve({});
  await Promise.all([['database', database], ['parts', live]].map(async ([name, check]) => {
    const result = await within(check as Promise<Record<string, boolean>>, HEALTH_BUDGET_MS);
    if (result === 'slow') { slow.push(name as string); checks[name as string] = false; } else if (result === 'failed') checks[name as string] = false;
    else Object.assign(checks, result);
  }));
  const down = Object.entries(checks).filter(([, up]) => !up).map(([name]) => name);
  if (!down.length) return { status: 'ok', checks };
  const message = [down.filter((n) => !slow.includes(n)).map((n) => `${n} down`), slow.map((n) => `${n}: no answer within ${HEALTH_BUDGET_MS} ms`)]
    .flat().join('; ');
  return { status: 'degraded', checks, ...(slow.length ? { slow } : {}), message };
}

/**
 * One `select 1` at a time: while a stalled database keeps a probe waiting, later /health calls share
 * it instead of each taking (and holding) another pooled connection.
 */
const probes = new WeakMap<App, Promise<unknown>>();
function probeDatabase(app: App): Promise<unknown> {
  let probe = probes.get(app);
  if (!probe) {
    const ended = boundedWork();
    probe = withAcquireLimit({ ms: HEALTH_BUDGET_MS + 100, what: 'health check' }, () => app.deps.db.knex.raw('select 1'))
      .finally(() => { probes.delete(app); ended(); });
    probes.set(app, probe);
  }
  return probe;
}

/** The check's result, 'failed' when it threw, 'slow' when it did not settle within `ms` (it is left to finish, its failure ignored). */
async function within<T>(check: Promise<T>, ms: number): Promise<T | 'failed' | 'slow'> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'slow'>((resolve) => { timer = setTimeout(() => resolve('slow'), ms); });
  try {
    return await Promise.race([check.catch(() => 'failed' as const), late]);
  } finally {
    clearTimeout(timer);
  }
}
