import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Unauthorized } from '../../lib/errors.js';
import type { Principal } from '../../db/index.js';

/** Reads `Authorization: Basic appId:secret` or `Bearer <token>` (spec part 5, reference-notes §2). */
export async function authenticateRequest(app: FastifyInstance, request: FastifyRequest): Promise<Principal> {
  const header = request.headers.authorization ?? '';
  const [scheme, value] = header.split(/\s+/, 2);
  const repo = app.deps.repos.applications;
  let principal: Principal | null = null;
  if (/^basic$/i.test(scheme ?? '') && value) {
    const decoded = Buffer.from(value, 'base64').toString('utf8');
    const sep = decoded.indexOf(':');
    if (sep > 0) principal = await repo.authenticate(decoded.slice(0, sep), decoded.slice(sep + 1));
  } else if (/^bearer$/i.test(scheme ?? '') && value) {
    principal = await repo.authenticateToken(value);
  }
  if (!principal) throw new Unauthorized();
  return principal;
}

/** Every route of the scope this is registered in requires application credentials. */
export function registerAppAuth(app: FastifyInstance): void {
  app.decorateRequest('principal', null);
  app.addHook('onRequest', async (request, reply) => {
    request.principal = await authenticateRequest(app, request);
    void reply;
  });
}

/** Admin routes take the admin token generated on first start (kept in credentials.json). */
export function registerAdminAuth(app: FastifyInstance): void {
  app.addHook('onRequest', async (request) => {
    const [scheme, token] = (request.headers.authorization ?? '').split(/\s+/, 2);
    if (!/^bearer$/i.test(scheme ?? '') || !token || !(await app.deps.repos.applications.isAdminToken(token))) {
      throw new Unauthorized('Missing or invalid admin token');
    }
  });
}
