import { publicUrl, type Config } from './config.js';
import { SERVICE_KINDS, type ServiceKind } from './services.js';

export interface LinkBuilder {
  /** Absolute URL on the sub-service's base; query values that are undefined or empty are left out. */
  url(service: ServiceKind, path: string, query?: Record<string, string | number | undefined | null>): string;
  base(service: ServiceKind): string;
}

/** Absolute links per sub-service; the bases are read when a link is built. */
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

/**
 * The one rule for link bases (spec: every record carries absolute links): each service's
 * configured URL, else the public URL (`--public-url`, else http://localhost:<bound HTTP port>).
 * The API, the rule events stored at ingest and the webhook payloads all build links with it.
 */
export function linksForConfig(config: Pick<Config, 'serviceUrls' | 'publicUrl' | 'httpPort'>,
  fallback: () => string = () => publicUrl(config as Config)): LinkBuilder {
  return createLinks(() => {
    const out = {} as Record<ServiceKind, string>;
    for (const k of SERVICE_KINDS) out[k] = config.serviceUrls[k] ?? fallback();
    return out;
  });
}
