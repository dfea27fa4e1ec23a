import type { Knex } from 'knex';
import { prepared } from '../prepared.js';
import type { NewEvent } from '../repositories/events.repository.js';
import { rulesRepository } from '../repositories/rules.repository.js';
import { vehiclesRepository } from '../repositories/vehicles.repository.js';
import type { ChangeRow, PlanEntry } from './evaluate.sql.js';
import { ruleCopy, type UrlFor } from './rule-copy.js';

export interface DeviceRule { id: string; applicationId: string; name: string; createdAt: Date; deviceId: string }

const STORED_RULE_EVENTS = `
  SELECT e.id, e.object_id AS rule_id, e.event_type, e.meta -> 'message' ->> 'id' AS message_id,
    coalesce((e.meta ->> 'firstEval')::boolean, false) AS first_eval
  FROM events e JOIN json_to_recordset(?::json) AS p(rule_id uuid, from_ts timestamptz)
    ON e.object_type = 'rule' AND e.object_id = p.rule_id AND e.ts >= p.from_ts`;

const eventType = (covered: boolean) => (covered ? 'rule-enter' : 'rule-leave');
const key = (ruleId: string, type: string, messageId: string, firstEval: boolean) => `${ruleId}|${type}|${messageId}|${firstEval}`;

/**
 * After a recomputation the stored rule events from `from` on must be the transitions just found:
 * events no longer implied are deleted (with their notifications), events still implied are kept
 * as they are (their notifications are not sent twice), and only the new transitions are returned.
 */
export async function supersede(trx: Knex, recomputed: PlanEntry[], transitions: ChangeRow[]) {
  if (!recomputed.length) return transitions;
  const param = JSON.stringify(recomputed.map((p) => ({ rule_id: p.ruleId, from_ts: p.from.toISOString() })));
  const { rows } = await prepared(trx, STORED_RULE_EVENTS, [param]);
  const stored = new Map((rows as Record<string, any>[]).map((r) => [key(r.rule_id, r.event_type, r.message_id, r.first_eval), r.id as string]));
  const implied = new Set(transitions.map((t) => key(t.ruleId, eventType(t.covered), t.messageId, t.firstEval)));
  const stale = [...stored].filter(([k]) => !implied.has(k)).map(([, id]) => id);
  if (stale.length) await trx('events').whereIn('id', stale).delete();
  return transitions.filter((t) => !stored.has(key(t.ruleId, eventType(t.covered), t.messageId, t.firstEval)));
}

/** `message.snapshot` (spec 6.1): the message's parameters, with `location` as {lat, lon} instead of GeoJSON. */
export function snapshotOf(data: Record<string, unknown>): Record<string, unknown> {
  const { location, ...rest } = data;
  const coords = (location as { coordinates?: unknown } | undefined)?.coordinates;
  if (!Array.isArray(coords)) return rest;
  return { location: { lat: coords[1], lon: coords[0] }, ...rest };
}

/** rule-enter / rule-leave events (spec 6.1, 6.2) for the transitions, meta assembled from the rule. */
export async function ruleEvents(trx: Knex, rules: DeviceRule[], transitions: ChangeRow[], url: UrlFor): Promise<NewEvent[]> {
  if (!transitions.length) return [];
  const byId = new Map(rules.map((r) => [r.id, r]));
  const boundaries = await rulesRepository(trx).boundariesOf([...new Set(transitions.map((t) => t.ruleId))], trx);
  const vehicleIds = await vehiclesRepository(trx).vehicleIdsAt(transitions.map((t) => ({ deviceId: byId.get(t.ruleId)!.deviceId, at: t.ts })), trx);
  const events: NewEvent[] = [];
  for (const [i, t] of transitions.entries()) {
    const rule = byId.get(t.ruleId)!;
    const copy = ruleCopy(url, { ...rule, evaluated: true, covered: t.covered, boundaries: boundaries.get(rule.id) ?? [] });
    events.push({
      deviceId: rule.deviceId, vehicleId: vehicleIds[i], applicationId: rule.applicationId,
      timestamp: t.ts, eventType: eventType(t.covered), objectType: 'rule', objectId: rule.id,
      meta: {
        direction: t.covered ? 'enter' : 'leave', firstEval: t.firstEval, rule: copy,
        message: { id: t.messageId, timestamp: t.ts.toISOString(), snapshot: snapshotOf(t.data ?? {}) },
      },
    });
  }
  return events.sort((a, b) => a.timestamp.getTime() - b.timestamp.getTime());
}
