import { randomUUID } from 'node:crypto';
import { verifyWebhook } from '../../lib/webhook-signature.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { startReceiver, waitFor, type Receiver } from './receiver.js';
import { deliveryKit } from './helpers.js';

let t: TestApp;
let rx: Receiver;
const kit = deliveryKit(() => t);
beforeAll(async () => { t = await buildTestApp(); rx = await startReceiver(); });
afterEach(async () => { await kit.closeWorkers(); });
afterAll(async () => { await rx?.close(); await t?.close(); });

const B = 'http://localhost:3999/api/v1';
const attemptsOf = (id: string) => t.repos.notifications.attempts(id);

describe('notification delivery', () => {
  it('POSTs the stored payload byte for byte, signed, and records complete with the receiver’s answer', async () => {
    const { app, device, subscription } = await kit.subscribed(`${rx.base}/ok/exact`, { appData: '{"tag":"ü"}' });
    const vehicle = randomUUID();
    const [event] = await kit.fire([{ deviceId: device.id, vehicleId: vehicle, objectId: vehicle }]);
    await kit.worker();
    const [{ id }] = await kit.notificationsOf(event.id);
    const n = await waitFor(async () => { const x = await kit.read(app, id); return x.state === 'complete' && x; }, 'complete');

    const [req] = rx.on('/ok/exact');
    expect(rx.on('/ok/exact')).toHaveLength(1);
    expect(req.body).toBe(n.payload);
    expect(req.headers['content-type']).toBe('application/json');
    expect(req.headers['user-agent']).toBe('drivewire-webhooks/1');
    expect(req.headers['x-drivewire-notification-id']).toBe(id);
    expect(verifyWebhook(req.body, req.headers['x-drivewire-signature'] as string, app.webhookSecret)).toMatchObject({ ok: true });
    expect(JSON.parse(req.body)).toEqual({
      notification: {
        id,
        event: {
          id: event.id, timestamp: '2026-03-01T10:00:00.000Z', deviceId: device.id, vehicleId: vehicle,
          stored: event.stored.toISOString(), storageLatency: event.stored.getTime() - Date.parse('2026-03-01T10:00:00.000Z'),
          eventType: 'startup', object: { id: vehicle, type: 'vehicle' }, meta: null,
          links: { self: `${B}/events/${event.id}`, notifications: `${B}/events/${event.id}/notifications` },
        },
        subscription,
      },
    });
    expect(n).toMatchObject({ state: 'complete', responseCode: 201, response: '{"status":"success"}', attempts: 1 });
    expect(Date.parse(n.respondedAt)).toBeGreaterThanOrEqual(Date.parse(n.notifiedAt));
    expect(n).not.toHaveProperty('nextAttemptAt');
    expect((await attemptsOf(id)).map((a) => [a.attempt, a.outcome, a.responseCode])).toEqual([[1, 'complete', 201]]);
  });

  it('stores each body of a burst byte for byte, whatever its multi-byte characters (the record takes them as one bytea)', async () => {
    const tags = ['ü', '🚗 ✓', 'a', '日本語', '\u0000\\"'];
    const first = await kit.subscribed(`${rx.base}/ok/burst`, { appData: JSON.stringify({ tag: tags[0] }) });
    for (const tag of tags.slice(1)) {
      const res = await t.app.inject({
        method: 'POST', url: `/api/v1/devices/${first.device.id}/subscriptions`, headers: { authorization: first.app.auth },
        payload: { subscription: { eventType: 'startup', url: `${rx.base}/ok/burst`, appData: JSON.stringify({ tag }) } },
      });
      expect(res.statusCode).toBe(201);
    }
    const [event] = await kit.fire([{ deviceId: first.device.id }]);
    await kit.worker();
    await waitFor(async () => rx.on('/ok/burst').length === tags.length, 'all delivered');
    const stored = (await waitFor(async () => {
      const list = await Promise.all((await kit.notificationsOf(event.id)).map((n) => kit.read(first.app, n.id)));
      return list.every((n) => n.state === 'complete') ? list : null;
    }, 'all recorded'))!;
    const bodies = new Map(rx.on('/ok/burst').map((r) => [r.headers['x-drivewire-notification-id'], r.body]));
    expect(stored.map((n) => n.payload)).toEqual(stored.map((n) => bodies.get(n.id)));
    expect(stored.map((n) => JSON.parse(JSON.parse(n.payload).notification.subscription.appData).tag).sort()).toEqual([...tags].sort());
  });

  it("delivers a rule event with the rule's appId and meta", async () => {
    const app = await t.make.application();
    const device = await t.make.device(app.principal);
    const rule = randomUUID();
    await t.db.knex('rules').insert({ id: rule, application_id: app.id, device_id: device.id, name: 'r', created_at: new Date() });
    await t.app.inject({
      method: 'POST', url: `/api/v1/devices/${device.id}/subscriptions`, headers: { authorization: app.auth },
      payload: { subscription: { eventType: 'rule-*', url: `${rx.base}/ok/rule`, object: { type: 'rule', id: rule } } },
    });
    const meta = { direction: 'enter', firstEval: true, message: { id: randomUUID(), snapshot: { location: { lat: 32.7, lon: -96.8 } } } };
    const [event] = await kit.fire([{ deviceId: device.id, applicationId: app.id, eventType: 'rule-enter', objectType: 'rule', objectId: rule, meta }]);
    await kit.worker();
    await waitFor(() => rx.on('/ok/rule').length === 1, 'the rule notification');
    const body = JSON.parse(rx.on('/ok/rule')[0].body).notification;
    expect(body.event).toMatchObject({ id: event.id, eventType: 'rule-enter', object: { id: rule, type: 'rule', appId: app.id }, meta });
    expect(body.subscription.object).toEqual({ id: rule, type: 'rule' });
  });

  it('records error for a 500 and retries with backoff until the attempts run out, posting the same bytes each time', async () => {
    const { app, device } = await kit.subscribed(`${rx.base}/fail/retries`);
    const [event] = await kit.fire([{ deviceId: device.id }]);
    await kit.worker({ webhookMaxAttempts: 3, webhookBackoffMs: 20 });
    const [{ id }] = await kit.notificationsOf(event.id);
    const n = await waitFor(async () => { const x = await kit.read(app, id); return x.attempts === 3 && x; }, '3 attempts');
    expect(n).toMatchObject({ state: 'error', responseCode: 500, response: 'receiver failed', respondedAt: null, attempts: 3 });
    expect(n).not.toHaveProperty('nextAttemptAt'); // error is final (spec 3.1)
    expect(rx.on('/fail/retries').map((r) => r.body)).toEqual([n.payload, n.payload, n.payload]);
    expect((await attemptsOf(id)).map((a) => [a.attempt, a.outcome, a.responseCode, a.response])).toEqual([
      [1, 'error', 500, 'receiver failed'], [2, 'error', 500, 'receiver failed'], [3, 'error', 500, 'receiver failed'],
    ]);
  });

  it('keeps a delivery that will be retried queued, with its attempt and nextAttemptAt, and completes on the retry', async () => {
    const { app, device } = await kit.subscribed(`${rx.base}/flaky/once`);
    const [event] = await kit.fire([{ deviceId: device.id }]);
    const worker = await kit.worker({ webhookBackoffMs: 60_000 });
    const [{ id }] = await kit.notificationsOf(event.id);
    const pending = await waitFor(async () => { const x = await kit.read(app, id); return x.attempts === 1 && x; }, 'first attempt');
    expect(pending).toMatchObject({ state: 'queued', responseCode: 500, response: 'not yet', attempts: 1 });
    expect(Date.parse(pending.nextAttemptAt)).toBeGreaterThan(Date.parse(pending.notifiedAt));
    await worker.close();
    await t.db.knex('notifications').where({ id }).update({ next_attempt_at: new Date() }); // the backoff has passed
    await kit.worker();
    const done = await waitFor(async () => { const x = await kit.read(app, id); return x.state === 'complete' && x; }, 'complete');
    expect(done).toMatchObject({ responseCode: 200, response: 'ok now', attempts: 2 });
    expect((await attemptsOf(id)).map((a) => [a.outcome, a.responseCode])).toEqual([['error', 500], ['complete', 200]]);
  });

  // /hang/: no answer at all; /trickle/: a status and a first chunk, never the end (the timeout cuts the connection,
  // and the outcome is the timeout, not the cut)
  it.each(['hang', 'trickle'])('records error with no response code when the /%s/ receiver has not answered within the timeout', async (kind) => {
    const path = `/${kind}/timeout`;
    const { app, device } = await kit.subscribed(`${rx.base}${path}`);
    const [event] = await kit.fire([{ deviceId: device.id }]);
    await kit.worker({ webhookTimeoutMs: 250, webhookMaxAttempts: 1 });
    const [{ id }] = await kit.notificationsOf(event.id);
    const n = await waitFor(async () => { const x = await kit.read(app, id); return x.state === 'error' && x; }, 'error');
    expect(n).toMatchObject({ responseCode: null, response: 'no answer within 250 ms', respondedAt: null, attempts: 1 });
    expect(n).not.toHaveProperty('nextAttemptAt');
    expect(rx.on(path)).toHaveLength(1);
  });

  it('delivers to a fast receiver while a slow one has not answered yet', async () => {
    const slow = await kit.subscribed(`${rx.base}/hold/slow`);
    const fast = await kit.subscribed(`${rx.base}/ok/fast`);
    await kit.worker();
    const [slowEvent] = await kit.fire([{ deviceId: slow.device.id }]);
    await waitFor(() => rx.on('/hold/slow').length === 1, 'the slow call');
    const [fastEvent] = await kit.fire([{ deviceId: fast.device.id }]);
    const [{ id: fastId }] = await kit.notificationsOf(fastEvent.id);
    await waitFor(async () => (await kit.read(fast.app, fastId)).state === 'complete', 'the fast delivery');
    const [{ id: slowId }] = await kit.notificationsOf(slowEvent.id);
    expect((await kit.read(slow.app, slowId)).state).toBe('queued');
    rx.release('/hold/slow');
    await waitFor(async () => (await kit.read(slow.app, slowId)).state === 'complete', 'the slow delivery');
  });

  it("drains one application's backlog past its share without waiting for the poll, as its fast receiver answers", async () => {
    const { device } = await kit.subscribed(`${rx.base}/ok/backlog`);
    // queued while no worker runs: more than the application's share (32) and the worker's slots (64) together
    await kit.fire(Array.from({ length: 300 }, () => ({ deviceId: device.id })));
    await kit.worker({}, { pollMs: 60_000 }); // its start claims once; every later claim must come from answers
    await waitFor(() => rx.on('/ok/backlog').length === 300, 'the whole backlog delivered', 10_000);
    expect(rx.on('/ok/backlog')).toHaveLength(300);
  });

  // PostgreSQL only: on PGlite's one connection the held lock would hold up the worker's claim as well.
  it.skipIf(!process.env.TEST_DATABASE_URL)('frees a call\'s slot once it has its answer, and holds at most 4 unrecorded per slot', async () => {
    const { app, device } = await kit.subscribed(`${rx.base}/ok/slot`);
    // The record statement's insert waits for this lock; the claim does not touch the table.
    const holder = await t.db.knex.transaction();
    let ids: string[];
    try {
      await holder.raw('LOCK TABLE notification_attempts IN EXCLUSIVE MODE');
      await kit.worker({ webhookConcurrency: 1 });
      const events = await kit.fire(Array.from({ length: 6 }, () => ({ deviceId: device.id })));
      ids = (await Promise.all(events.map((e) => kit.notificationsOf(e.id)))).map(([n]) => n.id);
      // one slot: each call waited for the one before it to be answered, none for an attempt to be recorded,
      // until 4 answered calls wait for their record (the worker polls every 50 ms: 10 polls find no room)
      await waitFor(() => rx.on('/ok/slot').length === 4, 'four calls through one slot, no attempt recorded');
      await new Promise((r) => setTimeout(r, 500));
      expect(rx.on('/ok/slot')).toHaveLength(4);
      for (const id of ids) expect((await kit.read(app, id)).state).toBe('queued');
    } finally {
      await holder.rollback();
    }
    for (const id of ids) await waitFor(async () => (await kit.read(app, id)).state === 'complete', 'the recorded attempts');
    expect(rx.on('/ok/slot')).toHaveLength(6);
  });
});
