import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { deliveryKit } from '../workers/helpers.js';
import { createRule, depotRule, ingest, insideDepot, outsideDepot } from './rules.fixtures.js';
import * as m030 from '../../db/migrations/030_notification_subscription_key.js';
import * as m036 from '../../db/migrations/036_time_partitions.js';
import { started, stillPending } from '../helpers/pending.js';

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

  it('deletes a deleted device\'s events and their notifications, as a foreign-key cascade would', async () => {
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

describe('notifications without a per-row key to their subscription (migration 030)', () => {
  it('deletes a deleted subscription\'s notifications and no other\'s', async () => {
    const gone = await kit.subscribed('http://127.0.0.1:9/r');
    const kept = await kit.subscribed('http://127.0.0.1:9/r');
    const [a] = await kit.fire([{ deviceId: gone.device.id }]);
    const [b] = await kit.fire([{ deviceId: kept.device.id }]);
    await t.db.knex('subscriptions').where({ id: gone.subscription.id }).del();
    expect(await count('notifications', { event_id: a.id })).toBe(0);
    expect(await count('notifications', { event_id: b.id })).toBe(1);
  });

  it('goes down to the key and up again', async () => {
    const key = async () => (await t.db.knex.raw(`SELECT 1 FROM pg_constraint WHERE conname = 'notifications_subscription_id_fkey'`)).rows.length;
    expect(await key()).toBe(0);
    // down in migration order: 036 makes notifications a plain table again first
    await m036.down(t.db.knex);
    await m030.down(t.db.knex);
    expect(await key()).toBe(1);
    await m030.up(t.db.knex);
    await m036.up(t.db.knex);
    expect(await key()).toBe(0);
    const { device, subscription } = await kit.subscribed('http://127.0.0.1:9/r');
    const [e] = await kit.fire([{ deviceId: device.id }]);
    await t.db.knex('subscriptions').where({ id: subscription.id }).del();
    expect(await count('notifications', { event_id: e.id })).toBe(0);
  });

  // The fan-out key-share locks the subscriptions it notifies (db/repositories/notification-fanout.ts). Two connections:
  // PostgreSQL only.
  it.runIf(process.env.TEST_DATABASE_URL)('gives no notification to a subscription deleted while the events were stored', async () => {
    const { device, subscription } = await kit.subscribed('http://127.0.0.1:9/r');
    const deleting = await t.db.knex.transaction();
    let fired: Promise<{ id: string }[]> | null = null;
    try {
      await deleting('subscriptions').where({ id: subscription.id }).del();
      fired = kit.fire([{ deviceId: device.id }]);
      expect(await stillPending(fired)).toBe(true);
      await deleting.commit();
      const [e] = await fired;
      expect(await count('notifications', { event_id: e.id })).toBe(0);
    } finally {
      if (!deleting.isCompleted()) await deleting.rollback();
      await fired?.catch(() => undefined);
    }
  });

  it.runIf(process.env.TEST_DATABASE_URL)('holds a subscription\'s delete until the events notifying it are stored, then takes their notifications', async () => {
    const { device, subscription } = await kit.subscribed('http://127.0.0.1:9/r');
    const trx = await t.db.knex.transaction();
    let deleted: Promise<number> | null = null;
    let eventId: string;
    try {
      [{ id: eventId }] = await t.repos.events.insert([{ deviceId: device.id, vehicleId: null, timestamp: new Date('2026-03-01T10:00:00.000Z'),
        eventType: 'startup', objectType: 'vehicle', objectId: null, meta: null }], trx);
      deleted = started(t.db.knex('subscriptions').where({ id: subscription.id }).del());
      expect(await stillPending(deleted)).toBe(true);
      await trx.commit();
      expect(await deleted).toBe(1);
    } finally {
      if (!trx.isCompleted()) await trx.rollback();
      await deleted?.catch(() => undefined);
    }
    expect(await count('notifications', { event_id: eventId })).toBe(0);
  });
});
