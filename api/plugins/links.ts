import type { FastifyInstance } from 'fastify';
import { SERVICE_KINDS, type ServiceKind } from '../../lib/services.js';
import type { LinkBuilder } from '../context.js';

/**
 * Absolute links per sub-service (spec: every record carries absolute `links`): each service's base
 * is its configured URL, else the server's public URL, which is read when the link is built so a
 * server listening on port 0 links to the port it got.
 */
export function createLinks(bases: () => Record<ServiceKind, string>): LinkBuilder {
  return {
    base: (service) => bases()[service],
    url(service, path, query) {
      const params = new URLSearchParams();
      for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined && v !== null && v !== '') params.set(k, String(v));
      const qs = params.toString();
      return `${bases()[service]}${path}${qs ? `?${qs}` : ''}`;
    },
  };
}

export function registerLinks(app: FastifyInstance, publicUrl: () => string): void {
  const { config } = app.deps;
  const bases = () => {
    const out = {} as Record<ServiceKind, string>;
    for (const k of SERVICE_KINDS) out[k] = config.serviceUrls[k] ?? publicUrl();
    return out;
  };
  app.decorate('links', createLinks(bases));
}
