import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { App } from '../../context.js';
import fastifyStatic from '@fastify/static';
import { AppError } from '../../../lib/errors.js';
import { CONSOLE_SRC, consoleCacheDir, ensureConsoleBundle } from './console.build.js';

/** What the page needs from the server's configuration; everything else it reads from the public API. */
export interface ConsoleSettings { tileUrl: string; tileAttribution: string }

/** index.html with the settings as JSON (`<` escaped, so no value can close the script element). */
export function renderIndex(template: string, settings: ConsoleSettings): string {
  const json = JSON.stringify(settings).replace(/</g, '\\u003c');
  return template.replace('<!--DRIVEWIRE_SETTINGS-->', `<script type="application/json" id="drivewire-settings">${json}</script>`);
}

/**
 * The page holds an application's secret, so it runs no script but its own bundle: scripts, styles and
 * connections from this origin only (WebSocket included), images also from the tile server (`{s}` becomes `*`).
 * Inline styles are allowed: Leaflet positions every tile and marker with them.
 */
export function contentSecurityPolicy(tileUrl: string): string {
  const u = new URL(tileUrl.replace(/\{s\}/g, 'tile-subdomain').replace(/\{[a-z]+\}/g, '0'));
  const tiles = `${u.protocol}//${u.host.replace('tile-subdomain', '*')}`;
  return [
    "default-src 'self'", `img-src 'self' data: ${tiles}`, "style-src 'self' 'unsafe-inline'", "script-src 'self'",
    "connect-src 'self'", "object-src 'none'", "base-uri 'none'", "frame-ancestors 'none'", "form-action 'none'",
  ].join('; ');
}

/**
 * The web console at /console: a static page that signs in with an application's credentials and
 * calls the public /api/v1 API like any other client. Bundled at start (console.build.ts) into a cache
 * directory; until the bundle is ready, requests wait for it.
 */
export default async function consoleRoutes(app: App) {
  const { config } = app.deps;
  // A platform whose console cannot be built still serves its API: the page answers 503 and the log says why.
  const dir = await consoleCacheDir().catch((err: Error) => {
    app.log.error({ err }, 'no directory for the console bundle');
    return null;
  });
  const ready = (dir ? ensureConsoleBundle(dir) : Promise.reject(new Error('no bundle directory'))).then(async (r) => {
    if (r.rebuilt) app.log.info({ bytes: r.bytes }, 'console bundle built');
    return renderIndex(await fs.readFile(path.join(CONSOLE_SRC, 'index.html'), 'utf8'),
      { tileUrl: config.tileUrl, tileAttribution: config.tileAttribution });
  });
  ready.catch((err) => app.log.error({ err }, 'building the console bundle failed'));
  const page = async () => {
    try {
      return await ready;
    } catch {
      throw new AppError(503, 'The console bundle could not be built; see the server log');
    }
  };

  await app.register(async (scope) => {
    scope.addHook('onRequest', async () => { await page(); });
    await scope.register(fastifyStatic, {
      root: dir ?? os.tmpdir(), prefix: '/console/', index: false, wildcard: true,
      allowedPath: (pathName) => /^\/app\.(js|css)$/.test(pathName),
      cacheControl: true, maxAge: 0, etag: true, lastModified: true,
    });
  });
  const csp = contentSecurityPolicy(config.tileUrl);
  const sendIndex = async (_req: unknown, reply: import('fastify').FastifyReply) =>
    reply.type('text/html; charset=utf-8').header('cache-control', 'no-cache').header('content-security-policy', csp)
      .header('x-content-type-options', 'nosniff').header('referrer-policy', 'no-referrer').send(await page());
  app.get('/console', { schema: { hide: true } }, async (_request, reply) => reply.redirect('/console/'));
  app.get('/console/', { schema: { hide: true } }, sendIndex);
}
