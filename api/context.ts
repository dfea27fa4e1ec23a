import type {
  FastifyBaseLogger, FastifyInstance, FastifyPluginAsync, FastifyRequest, FastifySchema, RawReplyDefaultExpression,
  RawRequestDefaultExpression, RawServerDefault, RouteGenericInterface,
} from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Config } from '../lib/config.js';
import type { Logger } from '../lib/logger.js';
import type { Db, Repositories } from '../db/index.js';
import type { ServiceKind } from '../lib/services.js';
import type { Principal } from '../db/index.js';

/** What every API module gets: configuration, the database and its repositories, and shared services. */
export interface ApiDeps {
  config: Config;
  db: Db;
  repos: Repositories;
  log: Logger;
  /** Optional live parts (set when the gateway/workers run in the same process). */
  live?: LiveHooks;
}

/**
 * The API's Fastify instance: the TypeBox type provider types each handler's `request.params`, `body` and `query`,
 * and what it returns, from the route's schema. It is still a FastifyInstance to code that only starts or injects.
 */
export type App = FastifyInstance<
  RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, FastifyBaseLogger, TypeBoxTypeProvider
>;

/** A module registered on the API: it receives the typed instance. */
export type ApiPlugin = FastifyPluginAsync<Record<never, never>, RawServerDefault, TypeBoxTypeProvider>;

/**
 * The request of any route whose schema has at least `S` (e.g. `{ params: typeof DeviceIdParams }`): what a helper
 * shared by several handlers of a module takes, typed as those handlers' own requests are.
 */
export type RequestOf<S extends FastifySchema> =
  FastifyRequest<RouteGenericInterface, RawServerDefault, RawRequestDefaultExpression, S, TypeBoxTypeProvider>;

export interface LiveHooks {
  /** Subscribe to stored messages of a device (for the WebSocket stream). */
  onMessage?(deviceId: string, fn: (message: unknown) => void): () => void;
  /** Health of parts running in this process, for GET /health. */
  health?(): Promise<Record<string, boolean>>;
  /** Prometheus text of parts running in this process. */
  metrics?(): Promise<string>;
}

import type { LinkBuilder } from '../lib/links.js';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
  }
  interface FastifyContextConfig {
    /** The sub-service a route belongs to: its links base and its transaction service name. */
    service?: ServiceKind;
    /** The route accepts credentials as a WebSocket subprotocol (api/plugins/auth.ts; the live stream only). */
    credentialsInProtocol?: boolean;
  }
  interface FastifyInstance {
    deps: ApiDeps;
    links: LinkBuilder;
  }
}

export type { LinkBuilder } from '../lib/links.js';
