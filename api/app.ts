import Fastify, {
  LogController, type FastifyBaseLogger, type FastifyReply, type RawReplyDefaultExpression, type RawRequestDefaultExpression,
  type RawServerDefault,
} from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import websocket from '@fastify/websocket';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { ApiDeps, App } from './context.js';
import { errorBody, registerErrorHandling } from './plugins/errors.js';
import { registerLinks } from './plugins/links.js';
import { registerAdminAuth, registerAppAuth, STREAM_PROTOCOL } from './plugins/auth.js';
import { registerTransactionLog } from './plugins/transactions.js';
import { registerInputGuard } from './plugins/input-guard.js';
import { registerDbAcquireLimit } from './plugins/db-limit.js';
import { registerSlowClientGuards, serverOptions } from './plugins/slow-clients.js';
import { isUuid } from '../lib/uuid.js';
import { API_MODULES } from './modules/index.js';
import adminRoutes from './modules/admin/admin.routes.js';
import systemRoutes from './modules/system/system.routes.js';
import consoleRoutes from './modules/console/console.routes.js';

/** Builds the Fastify application (not listening): the same code serves `drivewire serve` and the tests. */
export async function buildApi(
  deps: ApiDeps, opts: { publicUrl?: () => string; only?: 'all' | 'system' } = {},
): Promise<App> {
  // The platform's pino logger, seen as Fastify's base logger: App stays a FastifyInstance to its callers.
  const app = Fastify<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, FastifyBaseLogger>({
    loggerInstance: deps.log,
    // Per-request log lines only at debug/trace: at info a busy platform would log every call twice.
    logController: new LogController({ disableRequestLogging: !['debug', 'trace'].includes(deps.config.logLevel) }),
    bodyLimit: deps.config.httpBodyLimitBytes,
    // Request and headers timeouts, and the 408 they answer (plugins/slow-clients.ts).
    ...serverOptions(deps.config),
    ajv: {
      customOptions: { removeAdditional: false, coerceTypes: false, allErrors: false },
      // ajv-formats' uuid also takes a `urn:uuid:` prefix, which PostgreSQL refuses:
      // `format: 'uuid'` (schemas/common.ts Uuid) means exactly the 8-4-4-4-12 hex form.
      onCreate: (ajv) => { ajv.addFormat('uuid', { type: 'string', validate: isUuid }); },
    },
    // The router's own refusals (a path parameter over maxParamLength: 414, an undecodable URL: 400)
    // answer the documented error body too, not Fastify's `{error: "Bad Request", code, ...}`.
    frameworkErrors: (err, _request, reply) => {
      const status = err.statusCode ?? 400;
      (reply as FastifyReply).code(status).type('application/json').send(errorBody(status, err.message));
    },
  }).withTypeProvider<TypeBoxTypeProvider>();

  app.decorate('deps', deps);
  // The API speaks JSON only (Content-Type application/json): any other body is a 415.
  app.removeContentTypeParser('text/plain');
  registerErrorHandling(app);
  registerInputGuard(app);
  registerSlowClientGuards(app);
  registerDbAcquireLimit(app);
  registerLinks(app, opts.publicUrl ?? (() => deps.config.publicUrl ?? `http://localhost:${deps.config.httpPort}`));

  await app.register(swagger, {
    openapi: {
      info: { title: 'drivewire API', version: '1.0.0', description: 'Connected-vehicle platform API (docs/reference/rest-api.md)' },
      components: { securitySchemes: { basic: { type: 'http', scheme: 'basic' }, bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ basic: [] }, { bearer: [] }],
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });

  // At the root, before any route: an upgrade request runs the normal hooks (auth answers 401 before any
  // upgrade) and its socket is closed after any non-101 answer, whatever path it asked for.
  await app.register(websocket, {
    options: {
      maxPayload: 64 * 1024,
      // Only ever select drivewire.v1: a credential offered as a subprotocol (auth.ts) must not be echoed.
      handleProtocols: (protocols) => (protocols.has(STREAM_PROTOCOL) ? STREAM_PROTOCOL : false),
    },
  });
  if (opts.only !== 'system') await registerApplicationApi(app);
  await app.register(systemRoutes);
  if (opts.only !== 'system') await app.register(consoleRoutes);
  return app;
}

async function registerApplicationApi(app: App): Promise<void> {
  await app.register(async (scope: App) => {
    registerAppAuth(scope);
    registerTransactionLog(scope);
    for (const module of API_MODULES) await scope.register(module);
  });
  await app.register(async (scope: App) => {
    registerAdminAuth(scope);
    await scope.register(adminRoutes);
  });
}
