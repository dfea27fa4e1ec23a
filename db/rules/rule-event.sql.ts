import { ruleLinks, type UrlFor } from './rule-copy.js';

/*
 * A rule event's meta (docs/concepts/rules-events-webhooks.md), built in SQL by the statement that finds the
 * transition, so that neither the rule copy nor the message snapshot travels to the gateway and back as JSON text. It
 * is the shape ruleCopy (rule-copy.ts, what GET /rules/{id} answers) gives, with the message's snapshot;
 * test/db/rules.evaluate.test.ts holds the two to each other.
 */

/** Stand-ins for the ids in the link templates: uuid-shaped, so URL encoding leaves them as they are. */
const RULE_ID = '00000000-0000-4000-8000-0000000000a1';
const DEVICE_ID = '00000000-0000-4000-8000-0000000000a2';

/**
 * The three links of a rule copy (rule-copy.ts ruleLinks) with stand-ins for the rule and device ids, built with
 * the bases in force now (a base may be known only once the server listens): the statement's `links` bindings.
 */
export function ruleLinkTemplates(url: UrlFor): [string, string, string] {
  const links = ruleLinks(url, { id: RULE_ID, deviceId: DEVICE_ID });
  return [links.self, links.events, links.subscriptions];
}

const link = (template: string, rule: string, device: string) =>
  `replace(replace(${template}, '${RULE_ID}', ${rule}::text), '${DEVICE_ID}', ${device}::text)`;

/** JavaScript's Date#toISOString for a timestamptz expression (millisecond precision, UTC, `Z`). */
const isoText = (ts: string) => `to_char(${ts} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** rule-copy.ts presentBoundary, for a rule_boundaries row `b`. */
const BOUNDARY = `CASE b.type
    WHEN 'parametric' THEN jsonb_build_object('id', b.id, 'type', b.type, 'parameter', b.parameter, 'min', b.min, 'max', b.max)
    WHEN 'radius' THEN jsonb_build_object('id', b.id, 'type', b.type, 'lon', b.lon, 'lat', b.lat, 'radius', b.radius)
    WHEN 'corridor' THEN jsonb_build_object('id', b.id, 'type', b.type, 'coordinates', b.coordinates, 'widthMeters', b.width_m)
    ELSE jsonb_build_object('id', b.id, 'type', b.type, 'coordinates', b.coordinates) END
    || jsonb_strip_nulls(jsonb_build_object('deadband', b.deadband, 'bufferMeters', b.buffer_m))`;

/**
 * A rule's boundaries as its copy presents them (presentBoundary, in position order), for the rule `ruleId` (an SQL
 * expression): stored in `rules.boundaries` when the rule is created (rules are immutable; migration 029), read by
 * RULE_EVENT_META. The boundaries are aggregated from an index scan in position order: the aggregate's own ORDER BY
 * began a sort for every call.
 */
export const BOUNDARIES_OF = (ruleId: string) => `(SELECT coalesce(jsonb_agg(x.boundary), '[]'::jsonb)
        FROM (SELECT ${BOUNDARY} AS boundary FROM rule_boundaries b WHERE b.rule_id = ${ruleId} ORDER BY b.position) x)`;

/**
 * `message.snapshot`: the message's parameters (`m` a messages row), with `location` as {lat, lon} instead of GeoJSON.
 */
const snapshot = (m: string) => `message_data(${m}.num, ${m}.txt, NULL) || CASE WHEN ${m}.location IS NULL THEN '{}'::jsonb
    ELSE jsonb_build_object('location', jsonb_build_object('lat', ST_Y(${m}.location), 'lon', ST_X(${m}.location))) END`;

/**
 * The meta of a transition's event. Expects in scope: `r` (the rule: id, name, device_id, created_at, boundaries), `t`
 * (the transition: covered, first_eval, message_id, message_ts), `m` (its message) and `links` (self_t, events_t,
 * subs_t). The boundaries are the rule's stored copy (BOUNDARIES_OF, built again only for a rule stored without it):
 * built for every event, they would cost more than reading the copy. The objects are rows of the composite types of migration
 * 027, whose attributes are the keys: to_jsonb builds the meta in one pass (nested jsonb_build_object calls wrote out
 * and read back every level).
 */
export const RULE_EVENT_META = `to_jsonb(ROW(
    CASE WHEN t.covered THEN 'enter' ELSE 'leave' END, t.first_eval,
    ROW(r.id, r.name, r.device_id,
      coalesce(r.boundaries, ${BOUNDARIES_OF('r.id')}),
      true, t.covered, ${isoText('r.created_at')},
      ROW(r.device_id, 'device')::rule_event_object,
      ROW(${link('links.self_t', 'r.id', 'r.device_id')}, ${link('links.events_t', 'r.id', 'r.device_id')},
        ${link('links.subs_t', 'r.id', 'r.device_id')})::rule_event_links)::rule_event_rule,
    ROW(t.message_id, ${isoText('t.message_ts')}, ${snapshot('m')})::rule_event_message)::rule_event_meta)`;

/**
 * A rule event's meta with what the rule's options add (`base`: RULE_EVENT_META's): the options in the rule copy
 * (`rules.options`, as GET /rules/{id} presents them), `dwellSeconds` when the event waited for a dwell, and for a
 * crossing between two fixes (its time before its message's) `crossing`, with the fixes either side. Expects `r`, `t`
 * (with dwell_s), `m` and `pf` (the fix before the crossing, or nulls) in scope.
 */
export const ruleEventMeta = (base: string) => `CASE WHEN r.options IS NULL AND t.dwell_s IS NULL AND pf.id IS NULL THEN ${base}
    ELSE jsonb_set(${base}, '{rule}', (${base} -> 'rule') || coalesce(r.options, '{}'::jsonb))
      || jsonb_strip_nulls(jsonb_build_object('dwellSeconds', t.dwell_s, 'crossing', CASE WHEN pf.id IS NOT NULL THEN
        jsonb_build_object('interpolated', true, 'from', jsonb_build_object('id', pf.id, 'timestamp', ${isoText('pf.ts')}),
          'to', jsonb_build_object('id', m.id, 'timestamp', ${isoText('m.ts')})) END)) END`;
