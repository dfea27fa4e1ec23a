import type { FastifyInstance } from 'fastify';
import { linksForConfig } from '../../lib/links.js';

export { createLinks } from '../../lib/links.js';

/** app.links: absolute links on each sub-service's base (lib/links.ts), read per request. */
export function registerLinks(app: FastifyInstance, publicUrl: () => string): void {
  app.decorate('links', linksForConfig(app.deps.config, publicUrl));
}
