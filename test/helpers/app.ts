import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { loadConfig, type Config } from '../../lib/config.js';
import { silentLogger } from '../../lib/logger.js';
import { repositories, type Repositories } from '../../db/index.js';
import { buildApi } from '../../api/app.js';
import type { LiveHooks } from '../../api/context.js';
import { createTestDb } from './db.js';
import { factories } from './factories.js';

export interface TestApp {
  app: FastifyInstance;
  db: Awaited<ReturnType<typeof createTestDb>>;
  repos: Repositories;
  config: Config;
  make: ReturnType<typeof factories>;
  /** GET as an application; takes a path or an absolute link (only its path and query are used). */
  get(url: string, auth: string): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

/** A real API on a real (cloned) database, driven through `app.inject`. */
export async function buildTestApp(overrides: Record<string, unknown> = {}, live?: LiveHooks): Promise<TestApp> {
  const db = await createTestDb();
  const config = loadConfig({ httpPort: 3999, logLevel: 'silent', allowPrivateWebhooks: true, ...overrides }, {});
  const repos = repositories(db.knex);
  const app = await buildApi({ config, db, repos, log: silentLogger, live });
  await app.ready();
  return {
    app, db, repos, config, make: factories(repos),
    get(url, auth) {
      const u = new URL(url, 'http://local');
      return app.inject({ method: 'GET', url: u.pathname + u.search, headers: { authorization: auth } });
    },
    async close() { await app.close(); await db.close(); },
  };
}

export const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;
