import type { Knex } from 'knex';
import type { Config } from '../../lib/config.js';
import { evaluateAndStore, type StoredRuleEvent } from './evaluate.sql.js';
import { prepared } from '../prepared.js';
import type { PartRow, SqlStatement } from '../fused.js';
import { urlForConfig, type UrlFor } from './rule-copy.js';
import { ruleLinkTemplates } from './rule-event.sql.js';

/**
 * How far back a late frame makes rules recompute (docs/concepts/rules-events-webhooks.md).
 * A frame older than the rule's last evaluated message re-evaluates the device's stored messages
 * from that frame on, but never from earlier than 24 h before the device's newest message, nor
 * from beyond its 10,000 newest messages, whichever is later. Frames older than that bound are
 * stored and readable but do not change rule events. The bound keeps a late frame's recomputation
 * inside one batch's time (worst case: docs/development/performance.md).
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

/**
 * One device's newly stored messages in a batch (oldest first) and its newest stored timestamp before them (null:
 * none), as the pipeline has it (DeviceBatch.previousLatest: the insert statement reads it).
 */
interface DeviceRuleBatch { deviceId: string; messages: StoredMessageRef[]; previousLatest: Date | null }

/** One device's newly stored messages in a batch; late: the earliest is at or before a message stored before. */
interface DeviceSpan { deviceId: string; earliest: number; newest: number; late: boolean }

/**
 * Per device, the earliest timestamp a recomputation may start from (see RULE_RECOMPUTE_*): one
 * statement for every device of the batch that has a late frame.
 */
async function recomputeBounds(trx: Knex, deviceIds: string[], opts: RuleEvaluationOptions): Promise<Map<string, number>> {
  const { rows } = await trx.raw(
    `SELECT d.device_id, (SELECT max(ts) FROM messages WHERE device_id = d.device_id) AS latest,
      (SELECT ts FROM messages WHERE device_id = d.device_id ORDER BY ts DESC OFFSET ? LIMIT 1) AS nth
    FROM unnest(?::uuid[]) AS d(device_id)`,
    [(opts.maxMessages ?? RULE_RECOMPUTE_MAX_MESSAGES) - 1, deviceIds]);
  const maxAge = opts.maxAgeMs ?? RULE_RECOMPUTE_MAX_AGE_MS;
  return new Map((rows as { device_id: string; latest: Date | string; nth: Date | string | null }[]).map((r) => [r.device_id,
    Math.max(new Date(r.latest).getTime() - maxAge, r.nth ? new Date(r.nth).getTime() : -Infinity)]));
}

// The devices joined, not \`r.device_id = ANY (?)\`: where the plan scans the table (a few thousand rules), each rule was
// compared with every device of the batch in turn.
// Not locked: the rules statement locks the rules it writes for (evaluate.sql.ts `locked`).
const BATCH_RULES = `SELECT r.id, r.device_id FROM unnest(?::uuid[]) AS d(id) JOIN rules r ON r.device_id = d.id`;

// read with the insert, column by column (800 rows a batch under the rules bench)
export const BATCH_RULES_STATEMENT: SqlStatement = { ctes: '', main: BATCH_RULES, columns: ['id', 'device_id'] };

/** The rules of the batch's devices. */
async function batchRules(trx: Knex, deviceIds: string[]) {
  const { rows } = await prepared(trx, BATCH_RULES, [deviceIds]);
  return rulesOf(rows);
}

/** A row of BATCH_RULES. */
type BatchRuleRow = { id: string; device_id: string };

/** BATCH_RULES' rows, from the driver or from a db/fused.ts part. */
function rulesOf(rows: readonly BatchRuleRow[]) {
  return rows.map((r) => ({ id: r.id, deviceId: r.device_id }));
}

/**
 * Evaluates the rules of every device of an ingest batch over its newly stored messages, inside the
 * ingest transaction, and stores what follows: state changes, rule-enter / rule-leave events and their
 * notifications (evaluate.sql.ts). Set-based: one statement per batch (two with a late frame),
 * however many devices and rules it holds. The rules of a device whose new messages all follow its
 * previously stored ones continue from their states; otherwise (a late frame, at or before the device's
 * newest stored message) they are recomputed from the device's earliest new message, within the bound
 * above: their state changes and events from there on are replaced by what the ordered data implies (for
 * a rule that had evaluated nothing from there on, that is what continuing gives). Returns the events stored.
 */
export async function evaluateRuleBatch(trx: Knex, batch: DeviceRuleBatch[], opts: RuleEvaluationOptions,
  early?: PartRow[] | null, leaseMs: number | null = null): Promise<StoredRuleEvent[]> {
  const spans = new Map<string, DeviceSpan>();
  for (const d of batch) {
    if (!d.messages.length) continue;
    const earliest = d.messages[0].ts.getTime(); // messages are oldest first (ingest.types.ts DeviceBatch)
    const late = d.previousLatest !== null && earliest <= d.previousLatest.getTime();
    spans.set(d.deviceId, { deviceId: d.deviceId, earliest, newest: d.messages.at(-1)!.ts.getTime(), late });
  }
  if (!spans.size) return [];
  // read with the insert (the rules stage's early: the candidate devices, a superset), or now
  const rules = early ? rulesOf(early as BatchRuleRow[]).filter((r) => spans.has(r.deviceId)) : await batchRules(trx, [...spans.keys()]);
  if (!rules.length) return [];
  const lateDevices = [...new Set(rules.map((r) => r.deviceId).filter((id) => spans.get(id)!.late))];
  const bounds = lateDevices.length ? await recomputeBounds(trx, lateDevices, opts) : new Map<string, number>();
  // A rule only late messages older than the bound reach has nothing to do.
  const plan = rules.map((r) => {
    const span = spans.get(r.deviceId)!;
    const floor = span.late ? bounds.get(r.deviceId) ?? -Infinity : -Infinity;
    return { ruleId: r.id, late: span.late, newest: span.newest, from: new Date(Math.max(span.earliest, floor)),
      floor: Number.isFinite(floor) ? new Date(floor) : null };
  }).filter((p) => p.from.getTime() <= p.newest);
  return evaluateAndStore(trx, plan, ruleLinkTemplates(opts.url), leaseMs);
}

export type LinkConfig = Pick<Config, 'serviceUrls' | 'publicUrl' | 'httpPort'>;
export interface RuleDeriverContext {
  config?: LinkConfig;
  url?: UrlFor;
  maxAgeMs?: number;
  maxMessages?: number;
}

const DEFAULT_LINKS: LinkConfig = { serviceUrls: {} as LinkConfig['serviceUrls'], publicUrl: null, httpPort: 3000 };
export const optionsOf = (ctx: RuleDeriverContext = {}): RuleEvaluationOptions => ({
  url: ctx.url ?? urlForConfig(ctx.config ?? DEFAULT_LINKS), maxAgeMs: ctx.maxAgeMs, maxMessages: ctx.maxMessages,
});

/**
 * A batch of one device's newly stored messages (gateway/ingest: ts ascending) and the device's newest stored
 * timestamp before them (ingest repository latestTimestamps, read before storing them).
 */
export interface RuleBatch { deviceId: string; messages: { id: string; ts: Date }[]; previousLatest: Date | null }

/** One device's batch through the same set-based evaluation (tests and tools); returns the events stored. */
export function evaluateRulesDeriver(trx: Knex, batch: RuleBatch, ctx?: RuleDeriverContext): Promise<StoredRuleEvent[]> {
  return evaluateRuleBatch(trx, [batch], optionsOf(ctx));
}
