import type { Knex } from 'knex';
import type { PartRow, SqlPart } from '../../db/fused.js';
import { BATCH_RULES_STATEMENT, evaluateRuleBatch, optionsOf, type LinkConfig } from '../../db/rules/evaluate.js';
import type { StoredRuleEvent } from '../../db/rules/evaluate.sql.js';

/**
 * The ingest stage (gateway/ingest.types.ts IngestStage): one evaluation for all the devices of a batch. With the
 * batch's lease, the notifications go leased to the notification worker of this process (lib/bus.ts).
 */
export function rulesStage(deps: { config: LinkConfig }) {
  const opts = optionsOf({ config: deps.config });
  return {
    name: 'rules',
    /** The batch's rules, read in the insert's round trip. */
    early(candidates: { deviceId: string }[]): SqlPart | null {
      return candidates.length ? { statement: BATCH_RULES_STATEMENT, bindings: [candidates.map((d) => d.deviceId)] } : null;
    },
    /** The events come back stored (with their notifications) by the evaluation statement itself. */
    async apply(ctx: {
      trx: Knex; early?: PartRow[] | null; leaseMs?: number | null;
      devices: { deviceId: string; messages: { id: string; timestamp: Date }[]; previousLatest: Date | null }[];
    }): Promise<{ stored: StoredRuleEvent[] }> {
      return { stored: await evaluateRuleBatch(ctx.trx, ctx.devices.map((d) => ({
        deviceId: d.deviceId, messages: d.messages.map((m) => ({ id: m.id, ts: m.timestamp })), previousLatest: d.previousLatest,
      })), opts, ctx.early, ctx.leaseMs ?? null) };
    },
  };
}
