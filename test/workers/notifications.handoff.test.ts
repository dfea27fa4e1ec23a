import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Knex } from 'knex';
import { rulesStage } from '../../gateway/stages/rules.stage.js';
import { NOTIFICATION_ID_HEADER } from '../../lib/webhook-signature.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { recordStatements } from '../helpers/statements.js';
import { createRule, depotRule, insideDepot, storeBatch, type TestMessage } from '../db/rules.fixtures.js';
import { deliveryKit } from './helpers.js';
import { startReceiver, waitFor } from './receiver.js';

/**
 * The hand-off (lib/bus.ts handOffLeaseMs): rule events stored in the process of a notification worker come with
 * their notifications already leased to it, and it delivers them without claiming them from the queue.
 */
let t: TestApp;
let rx: Awaited<ReturnType<typeof startReceiver>>;
const kit = deliveryKit(() => t);
const CLAIMS = /skip locked/i;

beforeAll(async () => {
  t = await buildTestApp({ webhookTimeoutMs: 5_000, webhookMaxAttempts: 2, webhookBackoffMs: 50 });
  rx = await startReceiver();
});
afterEach(() => kit.closeWorkers());
afterAll(async () => { await rx?.close(); await t?.close(); });

/** What the ingest pipeline does for one device's batch: stores it, runs the rules stage with the bus, publishes after commit. */
async function ingest(deviceId: string, messages: TestMessage[]) {
  const stored = await t.db.knex.transaction(async (trx: Knex) => {
    const input = await storeBatch(t, trx, deviceId, messages);
    return (await rulesStage({ config: t.config }).apply({ trx, devices: [input], leaseMs: kit.bus.handOffLeaseMs() })).stored;
  });
  kit.bus.publishEvents(stored);
  return stored;
}

/** A device with `rules` copies of the depot rule, each with a `rule-*` subscription posting to `path`. */
async function subscribedDevice(path: string, rules = 1) {
  const app = await t.make.application();
  const device = await t.make.device(app.principal);
  for (let i = 0; i < rules; i++) {
    const rule = await createRule(t, app, device.id, { ...depotRule, name: `depot ${i}` });
    const res = await t.app.inject({
      method: 'POST', url: `/api/v1/devices/${device.id}/subscriptions`, headers: { authorization: app.auth },
      payload: { subscription: { eventType: 'rule-*', url: `${rx.base}${path}`, object: { type: 'rule', id: rule.id } } },
    });
    expect(res.statusCode).toBe(201);
  }
  return device;
}

const notifications = (deviceId: string) => t.db.knex('notifications').where({ device_id: deviceId }).orderBy('created_at');

describe('notifications handed to the worker of the process that stored them', () => {
  it('delivers a rule event’s notification without a claim; events stored elsewhere still are claimed', async () => {
    const device = await subscribedDevice('/ok/handed');
    const { sql } = await recordStatements(t.db.knex, async () => {
      await kit.worker({}, { pollMs: 60_000 }); // its start claims once (restart safety), then only when woken
      expect(kit.bus.handOffLeaseMs()).toBeGreaterThan(0);
      const [event] = await ingest(device.id, [insideDepot(0)]);
      expect(event.leased).toHaveLength(1);
      await waitFor(() => rx.on('/ok/handed').length === 1, 'the handed-over notification');
      await waitFor(async () => (await notifications(device.id))[0]?.state === 'complete', 'its attempt recorded');
    }, CLAIMS);
    expect(sql).toHaveLength(1);
    const [row] = await notifications(device.id);
    expect(row).toMatchObject({ state: 'complete', attempts: 1, locked_until: null });
    const body = JSON.parse(rx.on('/ok/handed')[0].body).notification;
    expect(body.event).toMatchObject({ eventType: 'rule-enter', object: { type: 'rule' } });
    expect(row.payload).toBe(rx.on('/ok/handed')[0].body);

    // an event stored without a hand-off (any other producer): the worker claims it from the queue
    const other = await kit.subscribed(`${rx.base}/ok/claimed`);
    const { sql: claims } = await recordStatements(t.db.knex, async () => {
      await kit.fire([{ deviceId: other.device.id }]);
      await waitFor(() => rx.on('/ok/claimed').length === 1, 'the claimed notification');
    }, CLAIMS);
    expect(claims.length).toBeGreaterThan(0);
  });

  it('hands over the notifications of any producer’s events stored with the lease (events.insert)', async () => {
    const { device } = await kit.subscribed(`${rx.base}/ok/startup`);
    let eventId = '';
    const { sql } = await recordStatements(t.db.knex, async () => {
      await kit.worker({}, { pollMs: 60_000 });
      const stored = await t.db.knex.transaction((trx: Knex) => t.repos.events.insert([{
        deviceId: device.id, vehicleId: null, timestamp: new Date('2026-03-01T10:00:00.000Z'), eventType: 'startup',
        objectType: 'vehicle', objectId: null, meta: null,
      }], trx, kit.bus.handOffLeaseMs()));
      expect(stored[0].leased).toHaveLength(1);
      eventId = stored[0].id;
      kit.bus.publishEvents(stored);
      await waitFor(() => rx.on('/ok/startup').length === 1, 'the handed-over notification');
      await waitFor(async () => (await notifications(device.id))[0]?.state === 'complete', 'its attempt recorded');
    }, CLAIMS);
    expect(sql).toHaveLength(1); // the worker's start
    const [row] = await notifications(device.id);
    expect(row).toMatchObject({ event_id: eventId, attempts: 1, locked_until: null, payload: rx.on('/ok/startup')[0].body });
    expect(JSON.parse(row.payload).notification.event).toMatchObject({ id: eventId, eventType: 'startup', timestamp: '2026-03-01T10:00:00.000Z' });
  });

  it('hands each notification over with its own event, however many events and notifications a statement stores', async () => {
    const a = await kit.subscribed(`${rx.base}/ok/many`);
    const second = await t.app.inject({
      method: 'POST', url: `/api/v1/devices/${a.device.id}/subscriptions`, headers: { authorization: a.app.auth },
      payload: { subscription: { eventType: 'startup', url: `${rx.base}/ok/many` } },
    });
    expect(second.statusCode).toBe(201);
    const b = await kit.subscribed(`${rx.base}/ok/many`);
    await kit.worker({}, { pollMs: 60_000 });
    const at = (s: number) => new Date(Date.UTC(2026, 2, 1, 10, 0, s));
    const stored = await t.db.knex.transaction((trx: Knex) => t.repos.events.insert([a, b, a].map((x, i) => ({
      deviceId: x.device.id, vehicleId: null, timestamp: at(i), eventType: 'startup', objectType: 'vehicle', objectId: null, meta: null,
    })), trx, kit.bus.handOffLeaseMs()));
    expect(stored.map((e) => e.leased?.length)).toEqual([2, 1, 2]);
    for (const e of stored) for (const h of e.leased!) expect([h.event.id, h.row.n_event_id]).toEqual([e.id, e.id]);
    kit.bus.publishEvents(stored);
    await waitFor(() => rx.on('/ok/many').length === 5, 'all five');
    const eventOf = new Map((await t.db.knex('notifications').whereIn('event_id', stored.map((e) => e.id)))
      .map((n: { id: string; event_id: string }) => [n.id, n.event_id]));
    const bodies = rx.on('/ok/many').map((r) => JSON.parse(r.body).notification);
    expect(new Set(bodies.map((n) => n.id)).size).toBe(5);
    for (const n of bodies) expect(n.event.id).toBe(eventOf.get(n.id));
  });

  it('gives back what it cannot hold, and delivers every notification once', async () => {
    const device = await subscribedDevice('/hold/full', 6);
    const worker = await kit.worker({ webhookConcurrency: 1 }, { pollMs: 60_000 }); // holds 4 notifications at most
    const events = await ingest(device.id, [insideDepot(0)]);
    expect(events).toHaveLength(6);
    expect(events.flatMap((e) => e.leased ?? [])).toHaveLength(6);
    await waitFor(() => rx.on('/hold/full').length === 1, 'the first call');
    // two did not fit: they are back in the queue, unleased and due
    await waitFor(async () => (await notifications(device.id)).filter((n) => n.locked_until === null && n.state === 'queued').length === 2,
      'the two given back');
    for (let answered = 0; answered < 6; answered++) {
      await waitFor(() => rx.on('/hold/full').length === answered + 1, `call ${answered + 1}`);
      rx.release('/hold/full');
    }
    await waitFor(async () => (await notifications(device.id)).every((n) => n.state === 'complete'), 'every attempt recorded');
    const ids = rx.on('/hold/full').map((r) => r.headers[NOTIFICATION_ID_HEADER]);
    expect(new Set(ids).size).toBe(6);
    expect((await notifications(device.id)).map((n) => n.attempts)).toEqual([1, 1, 1, 1, 1, 1]);
    const metrics = await worker.metrics!();
    expect(metrics).toContain('drivewire_webhook_handoffs_total{outcome="received"} 6');
    expect(metrics).toContain('drivewire_webhook_handoffs_total{outcome="given_back"} 2');
  });

  it('delivers before it stops what was handed over while a claim was in progress', async () => {
    // the platform's stop: the gateway's last batch hands its notifications over, then the worker is closed at once
    const device = await subscribedDevice('/ok/closing');
    const worker = await kit.worker({}, { pollMs: 60_000 });
    const stored = await t.db.knex.transaction(async (trx: Knex) => {
      const input = await storeBatch(t, trx, device.id, [insideDepot(0)]);
      return (await rulesStage({ config: t.config }).apply({ trx, devices: [input], leaseMs: kit.bus.handOffLeaseMs() })).stored;
    });
    expect(stored[0].leased).toHaveLength(1);
    kit.bus.publishEvents([{ id: randomUUID(), deviceId: device.id, eventType: 'startup' }]); // unleased: the worker claims
    kit.bus.publishEvents(stored); // handed over while that claim is in flight
    await worker.close();
    expect(rx.on('/ok/closing')).toHaveLength(1);
    expect((await notifications(device.id)).map((n) => [n.state, n.attempts, n.locked_until])).toEqual([['complete', 1, null]]);
  });

  it('stores notifications unleased once no worker of the process takes them', async () => {
    const device = await subscribedDevice('/ok/unleased');
    const worker = await kit.worker({}, { pollMs: 60_000 });
    await worker.close();
    expect(kit.bus.handOffLeaseMs()).toBeNull();
    const [event] = await ingest(device.id, [insideDepot(0)]);
    expect(event.leased).toBeUndefined();
    expect((await notifications(device.id)).map((n) => [n.state, n.locked_until])).toEqual([['queued', null]]);
  });
});
