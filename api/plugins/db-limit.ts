import type { FastifyRequest } from 'fastify';
import type { App } from '../context.js';
import { boundedWork, withAcquireLimit, type AcquireLimit } from '../../db/acquire-limit.js';

/** Each request's bound, and the end of its bounded work (db/acquire-limit.ts boundedWork). */
const bounds = new WeakMap<FastifyRequest, { limit: AcquireLimit; end(): void }>();

/**
 * Ends a request's bound before its answer: for a request whose reply is hijacked (a WebSocket upgrade), which never
 * reaches onResponse. Its later work waits for connections like the gateway's.
 */
export function endDbAcquireLimit(request: FastifyRequest): void {
  bounds.get(request)?.end();
}

/**
 * Every request waits at most `dbAcquireTimeoutMs` for a database connection: when
 * the pool stays saturated it is answered 503 with Retry-After (api/plugins/errors.ts) instead of
 * hanging for knex's 60 s and failing with a 500. The bound is entered at onRequest (authentication
 * reads the database) and again at preValidation, because body parsing continues from the socket's
 * events, outside the request's async context. It ends with the answer: work a request started (a run,
 * a live stream's timers) then waits for connections like the gateway and the workers do.
 */
export function registerDbAcquireLimit(app: App): void {
  const ms = app.deps.config.dbAcquireTimeoutMs;
  app.addHook('onRequest', (request, _reply, done) => {
    const limit = { ms, what: `${request.method} request` };
    const ended = boundedWork();
    bounds.set(request, { limit, end: () => { limit.ms = 0; ended(); } });
    withAcquireLimit(limit, done);
  });
  app.addHook('preValidation', (request, _reply, done) => withAcquireLimit(bounds.get(request)?.limit ?? { ms, what: 'request' }, done));
  const end = async (request: FastifyRequest) => endDbAcquireLimit(request);
  app.addHook('onResponse', end);
  app.addHook('onRequestAbort', end);
}
