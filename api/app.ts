import Fastify, { LogController, type FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import websocket from '@fastify/websocket';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { ApiDeps } from './context.js';
import { registerErrorHandling } from './plugins/errors.js';
import { registerLinks } from './plugins/links.js';
import { registerAdminAuth, registerAppAuth } from './plugins/auth.js';
import { registerTransactionLog } from './plugins/transactions.js';
import { API_MODULES } from './modules/index.js';
import adminRoutes from './modules/admin/admin.routes.js';
import systemRoutes from './modules/system/system.routes.js';

/** Builds the Fastify application (not listening): the same code serves `drivewire serve` and the tests. */
export async function buildApi(
  deps: ApiDeps, opts: { publicUrl?: () => string; only?: 'all' | 'system' } = {},
): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: deps.log,
    // Per-request log lines only at debug/trace: at info a busy platform would log every call twice.
    logController: new LogController({ disableRequestLogging: !['debug', 'trace'].includes(deps.config.logLevel) }),
    bodyLimit: 1024 * 1024,
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, allErrors: false } },
  }).withTypeProvider<TypeBoxTypeProvider>() as unknown as FastifyInstance;

  app.decorate('deps', deps);
  // The API speaks JSON only (spec: Content-Type application/json): any other body is a 415.
  app.removeContentTypeParser('text/plain');
  registerErrorHandling(app);
  registerLinks(app, opts.publicUrl ?? (() => deps.config.publicUrl ?? `http://localhost:${deps.config.httpPort}`));

  await app.register(swagger, {
    openapi: {
      info: { title: 'drivewire API', version: '1.0.0', description: 'Connected-vehicle platform API (spec: platform-api.md)' },
      components: { securitySchemes: { basic: { type: 'http', scheme: 'basic' }, bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ basic: [] }, { bearer: [] }],
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });

  // At the root, before any route: an upgrade request runs the normal hooks (auth answers 401 before any
  // upgrade) and its socket is closed after any non-101 answer, whatever path it asked for.
  await app.register(websocket, { options: { maxPayload: 64 * 1024 } });
  if (opts.only !== 'system') await registerApplicationApi(app);
  await app.register(systemRoutes);
  return app;
}

async function registerApplicationApi(app: FastifyInstance): Promise<void> {
  await app.register(async (scope) => {
    registerAppAuth(scope);
    registerTransactionLog(scope);
    for (const module of API_MODULES) await scope.register(module);
  });
  await app.register(async (scope) => {
    registerAdminAuth(scope);
    await scope.register(adminRoutes);
  });
}
