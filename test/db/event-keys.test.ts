import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { deliveryKit } from '../workers/helpers.js';
import { createRule, depotRule, ingest, insideDepot, outsideDepot } from './rules-fixtures.js';

let t: TestApp;
beforeAll(async () => { t = await buildTestApp(); });
afterAll(async () => { await t?.close(); });
const kit = deliveryKit(() => t);

const count = async (table: string, where: Record<string, unknown>) =>
  Number((await t.db.knex(table).where(where).count({ n: '*' }).first())!.n);

describe('events without per-row keys (migration 017)', () => {
  it('deletes the notifications of the events a statement deletes, with their attempts, and no other', async () => {
    const { device } = await kit.subscribed('http://127.0.0.1:9/r');
    const [a, b, c] = await kit.fire([{ deviceId: device.id }, { deviceId: device.id }, { deviceId: device.id }]);
    const [na] = await t.db.knex('notifications').where({ event_id: a.id }).pluck('id');
    await t.db.knex('notification_attempts').insert({
      notification_id: na, attempt: 1, outcome: 'error', notified_at: new Date(),
    });
    for (const e of [a, b, c]) expect(await count('notifications', { event_id: e.id })).toBe(1);

    await t.db.knex('events').whereIn('id', [a.id, b.id]).del();
    expect(await count('notifications', { event_id: a.id })).toBe(0);
    expect(await count('notifications', { event_id: b.id })).toBe(0);
    expect(await count('notification_attempts', { notification_id: na })).toBe(0);
    expect(await count('notifications', { event_id: c.id })).toBe(1);
  });

  it('deletes a deleted device\'s events and their notifications, as the cascade did', async () => {
    const { device } = await kit.subscribed('http://127.0.0.1:9/r');
    const other = await kit.subscribed('http://127.0.0.1:9/r');
    const [e] = await kit.fire([{ deviceId: device.id }]);
    const [kept] = await kit.fire([{ deviceId: other.device.id }]);

    await t.db.knex('devices').where({ id: device.id }).del();
    expect(await count('events', { device_id: device.id })).toBe(0);
    expect(await count('notifications', { event_id: e.id })).toBe(0);
    expect(await count('events', { id: kept.id })).toBe(1);
    expect(await count('notifications', { event_id: kept.id })).toBe(1);
  });
});

describe('the rule state log without a per-row key (migration 018)', () => {
  /** A device with two rules, each with logged change points. */
  async function loggedRules() {
    const app = await t.make.application();
    const device = await t.make.device(app.principal);
    const rules = [await createRule(t, app, device.id, depotRule), await createRule(t, app, device.id, depotRule)];
    await ingest(t, device.id, [insideDepot(0), outsideDepot(10)]);
    for (const r of rules) expect(await count('rule_state_log', { rule_id: r.id })).toBeGreaterThan(0);
    return { device, rules };
  }

  it('deletes a deleted rule\'s log and no other rule\'s', async () => {
    const { rules: [gone, kept] } = await loggedRules();
    await t.db.knex('rules').where({ id: gone.id }).del();
    expect(await count('rule_state_log', { rule_id: gone.id })).toBe(0);
    expect(await count('rule_state_log', { rule_id: kept.id })).toBeGreaterThan(0);
  });

  it('deletes the logs of the rules deleted with their device', async () => {
    const { device, rules } = await loggedRules();
    const other = await loggedRules();
    await t.db.knex('devices').where({ id: device.id }).del();
    for (const r of rules) expect(await count('rule_state_log', { rule_id: r.id })).toBe(0);
    for (const r of other.rules) expect(await count('rule_state_log', { rule_id: r.id })).toBeGreaterThan(0);
  });
});

describe('recorded attempts without a per-row key (migration 019)', () => {
  /** A subscription with one notification per fired event, each with a recorded attempt. */
  async function attempted(events: number) {
    const { subscription, device } = await kit.subscribed('http://127.0.0.1:9/r');
    const fired = await kit.fire(Array.from({ length: events }, () => ({ deviceId: device.id })));
    const ids: string[] = await t.db.knex('notifications').whereIn('event_id', fired.map((e) => e.id)).pluck('id');
    await t.db.knex('notification_attempts').insert(ids.map((id) => ({
      notification_id: id, attempt: 1, outcome: 'error', notified_at: new Date(),
    })));
    return { subscription, device, ids };
  }
  const attempts = async (ids: string[]) =>
    Number((await t.db.knex('notification_attempts').whereIn('notification_id', ids).count({ n: '*' }).first())!.n);

  it('deletes the attempts of the notifications a statement deletes, and no other', async () => {
    const { ids: [gone1, gone2, kept] } = await attempted(3);
    await t.db.knex('notifications').whereIn('id', [gone1, gone2]).del();
    expect(await attempts([gone1, gone2])).toBe(0);
    expect(await attempts([kept])).toBe(1);
  });

  it('deletes them with a deleted subscription\'s notifications, and keeps another subscription\'s', async () => {
    const gone = await attempted(2);
    const kept = await attempted(2);
    await t.db.knex('subscriptions').where({ id: gone.subscription.id }).del();
    expect(await attempts(gone.ids)).toBe(0);
    expect(await attempts(kept.ids)).toBe(2);
  });

  it('deletes them with a deleted device\'s events', async () => {
    const gone = await attempted(2);
    const kept = await attempted(1);
    await t.db.knex('devices').where({ id: gone.device.id }).del();
    expect(await attempts(gone.ids)).toBe(0);
    expect(await attempts(kept.ids)).toBe(1);
  });
});
