import type { FastifyRequest } from 'fastify';
import type { App } from '../context.js';
import { Unauthorized, ValidationError } from '../../lib/errors.js';
import type { Principal } from '../../db/index.js';

/** The WebSocket subprotocol a browser stream client asks for next to its credential protocol. */
export const STREAM_PROTOCOL = 'drivewire.v1';

/**
 * A browser cannot set `Authorization` on a WebSocket, only `Sec-WebSocket-Protocol`: on routes that allow it
 * (the live stream), `drivewire.basic.<base64url of appId:secret>` or `drivewire.bearer.<token>` offered as a
 * subprotocol stands for the header. The server only ever selects `drivewire.v1`, never echoing a credential.
 */
export function authorizationFromProtocols(header: string | undefined): string | null {
  for (const p of (header ?? '').split(',').map((s) => s.trim())) {
    const m = /^drivewire\.(basic|bearer)\.([A-Za-z0-9_-]+)$/.exec(p);
    if (!m) continue;
    if (m[1] === 'bearer') return `Bearer ${m[2]}`;
    return `Basic ${Buffer.from(m[2], 'base64url').toString('base64')}`;
  }
  return null;
}

/** Reads `Authorization: Basic appId:secret` or `Bearer <token>` (docs/reference/rest-api.md). */
export async function authenticateRequest(app: App, request: FastifyRequest): Promise<Principal> {
  const fromProtocol = !request.headers.authorization && request.routeOptions.config?.credentialsInProtocol === true
    ? authorizationFromProtocols(request.headers['sec-websocket-protocol']) : null;
  const header = request.headers.authorization ?? fromProtocol ?? '';
  const [scheme, value] = header.split(/\s+/, 2);
  const repo = app.deps.repos.applications;
  let principal: Principal | null = null;
  if (/^basic$/i.test(scheme ?? '') && value) {
    const decoded = Buffer.from(value, 'base64').toString('utf8');
    // PostgreSQL text cannot hold U+0000; the repository refuses an id that is no UUID.
    if (decoded.includes('\u0000')) throw new ValidationError('authorization: the Basic credentials contain a NUL character (\\u0000)');
    const sep = decoded.indexOf(':');
    if (sep > 0) principal = await repo.authenticate(decoded.slice(0, sep), decoded.slice(sep + 1));
  } else if (/^bearer$/i.test(scheme ?? '') && value) {
    principal = await repo.authenticateToken(value);
  }
  if (!principal) throw new Unauthorized();
  return principal;
}

/** Every route of the scope this is registered in requires application credentials. */
export function registerAppAuth(app: App): void {
  app.decorateRequest('principal', null);
  app.addHook('onRequest', async (request, reply) => {
    request.principal = await authenticateRequest(app, request);
    void reply;
  });
}

/** Admin routes take the admin token generated on first start (kept in credentials.json). */
export function registerAdminAuth(app: App): void {
  app.addHook('onRequest', async (request) => {
    const [scheme, token] = (request.headers.authorization ?? '').split(/\s+/, 2);
    if (!/^bearer$/i.test(scheme ?? '') || !token || !(await app.deps.repos.applications.isAdminToken(token))) {
      throw new Unauthorized('Missing or invalid admin token');
    }
  });
}
