import type { Knex } from 'knex';
import type { Config } from '../../lib/config.js';
import type { NewEvent } from '../repositories/events.repository.js';
import { runEvaluation } from './evaluate.sql.js';
import { saveStates } from './rule-state.js';
import { ruleEvents, supersede, type DeviceRule } from './rule-events.js';
import { urlForConfig, type UrlFor } from './rule-copy.js';

/**
 * How far back a late frame makes rules recompute (reference: README "Late frames and rules").
 * A frame older than the rule's last evaluated message re-evaluates the device's stored messages
 * from that frame on, but never from earlier than 24 h before the device's newest message, nor
 * from beyond its 10,000 newest messages, whichever is later. Frames older than that bound are
 * stored and readable but do not change rule events. Measured worst case (10 rules, 20,000
 * messages re-read, PostgreSQL 15 + PostGIS 3.3 on 2 busy cores): ~1.5 s inside the batch.
 */
export const RULE_RECOMPUTE_MAX_AGE_MS = 24 * 60 * 60 * 1000;
export const RULE_RECOMPUTE_MAX_MESSAGES = 10_000;

export interface RuleEvaluationOptions {
  /** Builds the absolute links of the rule copies in event meta. */
  url: UrlFor;
  maxAgeMs?: number;
  maxMessages?: number;
}

interface StoredMessageRef { id: string; ts: Date }

/** The earliest timestamp a recomputation may start from (see RULE_RECOMPUTE_*). */
async function recomputeBound(trx: Knex, deviceId: string, opts: RuleEvaluationOptions): Promise<Date> {
  const { rows } = await trx.raw(
    `SELECT (SELECT max(ts) FROM messages WHERE device_id = ?) AS latest,
      (SELECT ts FROM messages WHERE device_id = ? ORDER BY ts DESC OFFSET ? LIMIT 1) AS nth`,
    [deviceId, deviceId, (opts.maxMessages ?? RULE_RECOMPUTE_MAX_MESSAGES) - 1]);
  const latest = new Date(rows[0].latest).getTime() - (opts.maxAgeMs ?? RULE_RECOMPUTE_MAX_AGE_MS);
  return new Date(Math.max(latest, rows[0].nth ? new Date(rows[0].nth).getTime() : -Infinity));
}

/** The device's rules, key-share locked so a rule deleted meanwhile waits for this batch to commit. */
async function deviceRules(trx: Knex, deviceId: string) {
  const rows = await trx('rules as r').join('rule_states as s', 's.rule_id', 'r.id')
    .select('r.id', 'r.application_id', 'r.name', 'r.created_at', 's.last_ts').where('r.device_id', deviceId).forKeyShare('r');
  return rows.map((r: Record<string, any>) => ({
    rule: { id: r.id, applicationId: r.application_id, name: r.name, createdAt: r.created_at, deviceId } as DeviceRule,
    lastTs: r.last_ts ? new Date(r.last_ts) : null,
  }));
}

/**
 * Evaluates the device's rules over newly stored messages, inside the ingest transaction, and
 * returns the rule-enter / rule-leave events to store (the caller stores them with events.insert).
 * A rule whose last evaluated message is older than every new message continues from its state;
 * otherwise (a late frame) it is recomputed from the earliest new message, within the bound above:
 * its state changes and events from there on are replaced by what the ordered data implies.
 */
export async function evaluateRules(trx: Knex, deviceId: string, messages: StoredMessageRef[], opts: RuleEvaluationOptions): Promise<NewEvent[]> {
  if (!messages.length) return [];
  const rules = await deviceRules(trx, deviceId);
  if (!rules.length) return [];
  const times = messages.map((m) => m.ts.getTime());
  const [earliest, newest] = [Math.min(...times), Math.max(...times)];
  const isLate = (lastTs: Date | null) => lastTs !== null && earliest <= lastTs.getTime();
  const bound = rules.some((r) => isLate(r.lastTs)) ? (await recomputeBound(trx, deviceId, opts)).getTime() : earliest;
  // A rule only late messages older than the bound reach has nothing to do.
  const plan = rules
    .map(({ rule, lastTs }) => ({ ruleId: rule.id, late: isLate(lastTs), from: new Date(isLate(lastTs) ? Math.max(earliest, bound) : earliest) }))
    .filter((p) => p.from.getTime() <= newest);
  const recomputed = plan.filter((p) => p.late);
  const { changes, current } = await runEvaluation(trx, deviceId, plan);
  await saveStates(trx, recomputed, changes, current);
  const fresh = await supersede(trx, deviceId, recomputed, changes.filter((r) => r.transition));
  return ruleEvents(trx, deviceId, rules.map((r) => r.rule), fresh, opts.url);
}

type LinkConfig = Pick<Config, 'serviceUrls' | 'publicUrl' | 'httpPort'>;
export interface RuleDeriverContext {
  config?: LinkConfig;
  url?: UrlFor;
  maxAgeMs?: number;
  maxMessages?: number;
}

const DEFAULT_LINKS: LinkConfig = { serviceUrls: {} as LinkConfig['serviceUrls'], publicUrl: null, httpPort: 3000 };
const optionsOf = (ctx: RuleDeriverContext = {}): RuleEvaluationOptions => ({
  url: ctx.url ?? urlForConfig(ctx.config ?? DEFAULT_LINKS), maxAgeMs: ctx.maxAgeMs, maxMessages: ctx.maxMessages,
});

/** A batch of one device's newly stored messages (gateway/ingest: ts ascending). */
export interface RuleBatch { deviceId: string; messages: { id: string; ts: Date }[] }

/** The ingest deriver: `(trx, batch, ctx) => NewEvent[]`, run inside each batch transaction. */
export function evaluateRulesDeriver(trx: Knex, batch: RuleBatch, ctx?: RuleDeriverContext): Promise<NewEvent[]> {
  return evaluateRules(trx, batch.deviceId, batch.messages, optionsOf(ctx));
}

/**
 * The same as an ingest stage (gateway/ingest.types.ts IngestStage): devices without rules cost one
 * query for the whole batch.
 */
export function rulesStage(deps: { config: LinkConfig }) {
  const opts = optionsOf({ config: deps.config });
  return {
    name: 'rules',
    async apply(ctx: { trx: Knex; devices: { deviceId: string; messages: { id: string; timestamp: Date }[] }[] }): Promise<NewEvent[]> {
      const ids = ctx.devices.filter((d) => d.messages.length).map((d) => d.deviceId);
      if (!ids.length) return [];
      const withRules = new Set((await ctx.trx('rules').distinct('device_id').whereIn('device_id', ids)).map((r: any) => r.device_id));
      const events: NewEvent[] = [];
      for (const d of ctx.devices.filter((x) => withRules.has(x.deviceId))) {
        events.push(...await evaluateRules(ctx.trx, d.deviceId, d.messages.map((m) => ({ id: m.id, ts: m.timestamp })), opts));
      }
      return events;
    },
  };
}
