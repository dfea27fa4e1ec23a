import { publicUrl, type Config } from './config.js';
import type { ServiceKind } from './services.js';

export interface LinkBuilder {
  /** Absolute URL on the sub-service's base; query values that are undefined or empty are left out. */
  url(service: ServiceKind, path: string, query?: Record<string, string | number | undefined | null>): string;
  base(service: ServiceKind): string;
}

/**
 * Absolute links per sub-service; a service's base is read when a link is built. A link without a query is the base and
 * the path (a URLSearchParams and every service's base per link were a noticeable share of the notification worker's
 * thread).
 */
export function createLinks(base: (service: ServiceKind) => string): LinkBuilder {
  return {
    base,
    url(service, path, query) {
      if (!query) return base(service) + path;
      const params = new URLSearchParams();
      for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== '') params.set(k, String(v));
      const qs = params.toString();
      return `${base(service)}${path}${qs ? `?${qs}` : ''}`;
    },
  };
}

/**
 * The one rule for link bases (every record carries absolute links): each service's
 * configured URL, else the public URL (`--public-url`, else http://localhost:<bound HTTP port>).
 * The API, the rule events stored at ingest and the webhook payloads all build links with it.
 */
export function linksForConfig(config: Pick<Config, 'serviceUrls' | 'publicUrl' | 'httpPort'>,
  fallback: () => string = () => publicUrl(config as Config)): LinkBuilder {
  return createLinks((service) => config.serviceUrls[service] ?? fallback());
}
