import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { rulesStage } from '../../gateway/stages/rules.stage.js';
import { at, createRule, depotRule, ingest, insideDepot, outsideDepot, ruleEventTrail, storeBatch, type TestMessage } from './rules.fixtures.js';

let t: TestApp;
beforeAll(async () => { t = await buildTestApp(); });
afterAll(async () => { await t?.close(); });

const depot = depotRule;
const inside = (s: number): TestMessage => insideDepot(s);
const outside = (s: number): TestMessage => outsideDepot(s);

/** A device with the depot rule, fed `batches` one ingest batch at a time. */
async function feed(batches: TestMessage[][], ctx = {}) {
  const app = await t.make.application();
  const device = await t.make.device(app.principal);
  const rule = await createRule(t, app, device.id, depot);
  for (const batch of batches) await ingest(t, device.id, batch, ctx);
  return { device, rule, trail: await ruleEventTrail(t, rule.id) };
}

describe('late frames and rules', () => {
  it('moves a leave to the late frame that left first', async () => {
    const late = await feed([[inside(0), inside(10), outside(20)], [outside(15)]]);
    expect(late.trail).toEqual([['rule-enter', true, at(0).toISOString()], ['rule-leave', false, at(15).toISOString()]]);
    const ordered = await feed([[inside(0), inside(10), outside(15), outside(20)]]);
    expect(late.trail).toEqual(ordered.trail);
  });

  it('inserts a leave and an enter for a late excursion and keeps the later events it still implies', async () => {
    const app = await t.make.application();
    const device = await t.make.device(app.principal);
    const rule = await createRule(t, app, device.id, depot);
    await ingest(t, device.id, [inside(0), inside(10), outside(20)]);
    const [kept] = await t.db.knex('events').select('id').where({ object_id: rule.id, event_type: 'rule-leave' });
    const returned = await ingest(t, device.id, [outside(5)]);
    expect(returned.map((e) => [e.eventType, e.timestamp])).toEqual([['rule-leave', at(5)], ['rule-enter', at(10)]]);
    expect(await ruleEventTrail(t, rule.id)).toEqual([
      ['rule-enter', true, at(0).toISOString()], ['rule-leave', false, at(5).toISOString()],
      ['rule-enter', false, at(10).toISOString()], ['rule-leave', false, at(20).toISOString()],
    ]);
    const leaves = await t.db.knex('events').select('id', 'ts').where({ object_id: rule.id, event_type: 'rule-leave' }).orderBy('ts');
    expect(leaves[1].id).toBe(kept.id);
  });

  it('moves the first evaluation to a late frame older than every evaluated message', async () => {
    const late = await feed([[inside(0), outside(10)], [outside(-5)]]);
    expect(late.trail).toEqual([
      ['rule-leave', true, at(-5).toISOString()], ['rule-enter', false, at(0).toISOString()], ['rule-leave', false, at(10).toISOString()],
    ]);
    const ordered = await feed([[outside(-5), inside(0), outside(10)]]);
    expect(late.trail).toEqual(ordered.trail);
  });

  it('changes nothing for a late frame that agrees with its neighbours (a recomputed rule without change points)', async () => {
    const { device, rule, trail } = await feed([[inside(0), inside(20)]]);
    const before = await t.db.knex('events').select('id').where({ object_id: rule.id });
    const log = await t.db.knex('rule_state_log').select('ts', 'states').where({ rule_id: rule.id }).orderBy('ts');
    expect(await ingest(t, device.id, [inside(10)])).toEqual([]);
    expect(await ruleEventTrail(t, rule.id)).toEqual(trail);
    expect(await t.db.knex('events').select('id').where({ object_id: rule.id })).toEqual(before);
    expect(await t.db.knex('rule_state_log').select('ts', 'states').where({ rule_id: rule.id }).orderBy('ts')).toEqual(log);
    const [state] = await t.db.knex('rule_states').select('evaluated', 'covered', 'states').where('rule_id', rule.id);
    expect(state).toEqual({ evaluated: true, covered: true, states: [true] });
  });

  it('keeps in rule_states the states of the last logged change point, which seed a rule continuing live', async () => {
    const path = [inside(0), outside(5), outside(10), inside(15), inside(20), outside(25), inside(30), outside(35)];
    const { rule } = await feed([[path[3], path[6]], [path[0], path[7]], [path[5]], [path[1], path[2], path[4]], [inside(40)]]);
    const last = await t.db.knex('rule_state_log').where({ rule_id: rule.id }).orderBy([{ column: 'ts', order: 'desc' }, { column: 'message_id', order: 'desc' }]).first();
    const state = await t.db.knex('rule_states').where({ rule_id: rule.id }).first();
    expect(state.states).toEqual(last.states);
    expect(state.states).toEqual([true]);
  });

  it('gives the same events as ordered data for frames arriving in shuffled batches', async () => {
    const path = [inside(0), outside(5), outside(10), inside(15), inside(20), outside(25), inside(30), outside(35)];
    const ordered = await feed([path]);
    const shuffled = await feed([[path[3], path[6]], [path[0], path[7]], [path[5]], [path[1], path[2], path[4]]]);
    expect(shuffled.trail).toEqual(ordered.trail);
    const [state] = await t.db.knex('rule_states').select('covered', 'states').where('rule_id', shuffled.rule.id);
    expect([state.covered, state.states]).toEqual([false, [false]]);
  });

  it('leaves rule events alone for a frame older than the recompute bound', async () => {
    const bound = { maxAgeMs: 60_000 };
    const late = await feed([[inside(0), inside(100), inside(200)], [outside(50)]], bound);
    expect(late.trail).toEqual([['rule-enter', true, at(0).toISOString()]]);
    const within = await feed([[inside(0), inside(100), inside(200)], [outside(150)]], bound);
    expect(within.trail).toEqual([
      ['rule-enter', true, at(0).toISOString()], ['rule-leave', false, at(150).toISOString()], ['rule-enter', false, at(200).toISOString()],
    ]);
  });

  it('bounds the recompute to the newest messages of the device', async () => {
    const late = await feed([[inside(0), inside(10), inside(20), inside(30)], [outside(5), outside(25)]], { maxMessages: 3 });
    expect(late.trail).toEqual([
      ['rule-enter', true, at(0).toISOString()], ['rule-leave', false, at(25).toISOString()], ['rule-enter', false, at(30).toISOString()],
    ]);
  });

  it('runs as an ingest stage over several devices, skipping devices without rules', async () => {
    const app = await t.make.application();
    const withRule = await t.make.device(app.principal);
    const without = await t.make.device(app.principal);
    const rule = await createRule(t, app, withRule.id, depot);
    const events = await t.db.knex.transaction(async (trx) => {
      const devices: Awaited<ReturnType<typeof storeBatch>>[] = [];
      for (const d of [without, withRule]) devices.push(await storeBatch(t, trx, d.id, [inside(0)]));
      return (await rulesStage({ config: t.config }).apply({ trx, devices })).stored;
    });
    expect(events.map((e) => [e.deviceId, e.objectId, e.eventType])).toEqual([[withRule.id, rule.id, 'rule-enter']]);
  });
});
