import type { App } from '../context.js';
import { linksForConfig } from '../../lib/links.js';

export { createLinks } from '../../lib/links.js';

/** app.links: absolute links on each sub-service's base (lib/links.ts), read per request. */
export function registerLinks(app: App, publicUrl: () => string): void {
  app.decorate('links', linksForConfig(app.deps.config, publicUrl));
}
