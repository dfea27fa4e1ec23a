import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { createRule, depotRule, ingest, insideDepot, outsideDepot, ruleEventTrail, storeBatch } from './rules.fixtures.js';
import { evaluateRulesDeriver } from '../../db/rules/evaluate.js';
import { started, stillPending } from '../helpers/pending.js';

let t: TestApp;
beforeAll(async () => { t = await buildTestApp(); });
afterAll(async () => { await t?.close(); });

const logOf = async (ruleId: string) => (await t.db.knex('rule_state_log').where({ rule_id: ruleId }).count({ n: '*' }))[0].n;

async function ruleWithState() {
  const app = await t.make.application();
  const device = await t.make.device(app.principal);
  const rule = await createRule(t, app, device.id, depotRule);
  await ingest(t, device.id, [outsideDepot(0)]);
  return { device, rule };
}

// A rule deleted while a batch evaluates it (the API, or a deregistration, on another connection): its state log goes
// with it (a statement trigger, migration 018), so the batch must not write for it once it is gone. The rules statement
// key-share locks the rules it writes for (db/rules/evaluate.sql.ts `locked`). Two connections: PostgreSQL only.
describe.runIf(process.env.TEST_DATABASE_URL)('a rule deleted while a batch evaluates it', () => {
  it('waits for a batch that wrote for the rule, then takes the batch\'s log with it', async () => {
    const { device, rule } = await ruleWithState();
    const trx = await t.db.knex.transaction();
    try {
      const { previousLatest, stored } = await storeBatch(t, trx, device.id, [insideDepot(10)]);
      expect(await evaluateRulesDeriver(trx, { deviceId: device.id, messages: stored, previousLatest }, { config: t.config })).toHaveLength(1);
      const deleted = started(t.db.knex('rules').where({ id: rule.id }).delete());
      expect(await stillPending(deleted)).toBe(true);
      await trx.commit();
      expect(await deleted).toBe(1);
    } finally {
      if (!trx.isCompleted()) await trx.rollback();
    }
    expect(await logOf(rule.id)).toBe(0);
    expect((await ruleEventTrail(t, rule.id)).map(([type]) => type)).toEqual(['rule-leave', 'rule-enter']);
  });

  it('lets a batch that read the rule before its deletion committed write nothing for it', async () => {
    const { device, rule } = await ruleWithState();
    const deleting = await t.db.knex.transaction();
    let batch: Promise<unknown> | null = null;
    try {
      await deleting('rules').where({ id: rule.id }).delete();
      batch = ingest(t, device.id, [insideDepot(10)]);
      expect(await stillPending(batch)).toBe(true);
      await deleting.commit();
      expect(await batch).toEqual([]);
    } finally {
      if (!deleting.isCompleted()) await deleting.rollback();
      await batch?.catch(() => undefined);
    }
    expect(await logOf(rule.id)).toBe(0);
    expect(await t.db.knex('rule_states').where({ rule_id: rule.id })).toEqual([]);
    expect((await ruleEventTrail(t, rule.id)).map(([type]) => type)).toEqual(['rule-leave']);
  });
});
