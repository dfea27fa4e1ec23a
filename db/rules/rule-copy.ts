import type { Config } from '../../lib/config.js';
import type { ServiceKind } from '../../lib/services.js';
import { linksForConfig } from '../../lib/links.js';
import { presentOptions, type Boundary, type RuleRecord, type RuleWithBoundaries } from './types.js';

/** Builds an absolute URL on a sub-service's base (the API's LinkBuilder.url has this shape). */
export type UrlFor = (service: ServiceKind, path: string, query?: Record<string, string | undefined>) => string;

/** Links outside a request (rule copies stored in event meta at ingest): lib/links.ts's rule. */
export function urlForConfig(config: Pick<Config, 'serviceUrls' | 'publicUrl' | 'httpPort'>): UrlFor {
  const links = linksForConfig(config);
  return (service, path, query) => links.url(service, path, query);
}

/** Rule links: self, its events (`type=rule-*`) and its subscriptions. */
export function ruleLinks(url: UrlFor, rule: Pick<RuleRecord, 'id' | 'deviceId'>) {
  return {
    self: url('rule', `/api/v1/rules/${rule.id}`),
    events: url('event', `/api/v1/devices/${rule.deviceId}/events`, { type: 'rule-*', objectId: rule.id }),
    subscriptions: url('event', `/api/v1/devices/${rule.deviceId}/subscriptions`, { objectType: 'rule', objectId: rule.id }),
  };
}

/** An optional field, present only when set. */
const set = <K extends string>(key: K, value: number | undefined | null) =>
  (value === undefined || value === null ? {} : { [key]: value }) as Partial<Record<K, number>>;

/** A boundary with exactly the fields of its type (the optional ones when set), in a stable key order. */
export function presentBoundary(b: Boundary) {
  switch (b.type) {
    case 'parametric': return { id: b.id, type: b.type, parameter: b.parameter, min: b.min, max: b.max, ...set('deadband', b.deadband) };
    case 'radius': return { id: b.id, type: b.type, lon: b.lon, lat: b.lat, radius: b.radius, ...set('bufferMeters', b.bufferMeters) };
    case 'polygon': return { id: b.id, type: b.type, coordinates: b.coordinates, ...set('bufferMeters', b.bufferMeters) };
    case 'corridor': return { id: b.id, type: b.type, coordinates: b.coordinates, widthMeters: b.widthMeters, ...set('bufferMeters', b.bufferMeters) };
  }
}

/**
 * The full rule: what GET /rules/{id} answers and what a rule event's meta carries,
 * with boundaries, evaluated, covered, createdAt, object and links.
 */
export function ruleCopy(url: UrlFor, rule: RuleWithBoundaries) {
  return {
    id: rule.id,
    name: rule.name,
    deviceId: rule.deviceId,
    boundaries: rule.boundaries.map(presentBoundary),
    ...presentOptions(rule),
    evaluated: rule.evaluated,
    covered: rule.covered,
    createdAt: rule.createdAt.toISOString(),
    object: { id: rule.deviceId, type: 'device' as const },
    links: ruleLinks(url, rule),
  };
}

/** The list item (RuleSummary): no boundaries. */
export function ruleSummary(url: UrlFor, rule: RuleRecord) {
  return {
    id: rule.id, name: rule.name, deviceId: rule.deviceId, ...presentOptions(rule), evaluated: rule.evaluated, covered: rule.covered,
    createdAt: rule.createdAt.toISOString(), links: ruleLinks(url, rule),
  };
}
