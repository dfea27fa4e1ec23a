import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { startReceiver, waitFor, type Receiver } from '../workers/receiver.js';
import { deliveryKit } from '../workers/helpers.js';

/**
 * One tenant's receivers cannot hold up another's webhooks, over real HTTP: a hanging receiver holds at most its
 * endpoint's share of the delivery slots, an application's subscriptions are capped, a subscription whose receiver
 * keeps failing is paused (its notifications kept) until it is resumed, and whatever a receiver answers, its attempt is
 * recorded once.
 */
let t: TestApp;
const receivers: Receiver[] = [];
const kit = deliveryKit(() => t);
beforeAll(async () => { t = await buildTestApp(); });
afterEach(async () => {
  await kit.closeWorkers();
  for (const r of receivers.splice(0)) await r.close();
  await t.db.knex('notifications').del(); // each test's queue starts empty
});
afterAll(async () => { await t?.close(); });

async function receiver() {
  const r = await startReceiver();
  receivers.push(r);
  return r;
}

/** Hanging calls are given up when the test's worker closes, not after the delivery timeout. */
const QUICK_CLOSE = { pollMs: 50, closeTimeoutMs: 100 };
/** Slots: 8 in all, 2 per endpoint, 4 per application; a call lasts until the test ends (no timeout within it). */
const SLOTS = { webhookConcurrency: 8, webhookEndpointConcurrency: 2, webhookApplicationConcurrency: 4, webhookTimeoutMs: 120_000 };

/** The worker's claim statements run so far (its metrics). */
async function claims(worker: { metrics?: () => Promise<string> }): Promise<number> {
  return Number(/^drivewire_webhook_claims_total (\d+)$/m.exec(await worker.metrics!())?.[1] ?? NaN);
}

/** Waits until the worker has run `n` more claims: each would have taken whatever was due. */
async function claimRounds(worker: { metrics?: () => Promise<string> }, n: number) {
  const from = await claims(worker);
  expect(from).toBeGreaterThanOrEqual(0);
  await waitFor(async () => (await claims(worker)) >= from + n, `${n} claims`, 20_000);
}

/** Tenant X: one device, 150 subscriptions to a receiver that never answers. */
async function hangingTenant(hang: Receiver) {
  const x = await kit.subscribed(`${hang.base}/hang/x`);
  for (let i = 1; i < 150; i++) {
    await t.repos.subscriptions.create(x.app.principal, { deviceId: x.device.id, eventType: 'startup', url: `${hang.base}/hang/x`, object: null, appData: null });
  }
  return x;
}

/** Waits for the event's one notification to `y` to be delivered, at the first attempt. */
async function expectDelivered(y: Awaited<ReturnType<typeof kit.subscribed>>, eventId: string) {
  const [yn] = await kit.notificationsOf(eventId);
  const delivered = await waitFor(async () => { const n = await kit.read(y.app, yn.id); return n.state === 'complete' && n; }, "Y's webhook", 10_000);
  expect(delivered).toMatchObject({ responseCode: 201, attempts: 1 });
}

async function api(method: string, url: string, auth: string, payload?: unknown) {
  const res = await t.app.inject({ method: method as 'GET', url, headers: { authorization: auth }, payload: payload as object });
  return { status: res.statusCode, body: res.json() };
}

describe('a tenant whose receiver never answers', () => {
  it("holds at most its endpoint's limit of slots: another tenant's webhook is delivered while every one of its calls still hangs", async () => {
    const hang = await receiver();
    const ok = await receiver();
    const x = await hangingTenant(hang);
    const y = await kit.subscribed(`${ok.base}/ok/y`);
    // X's event first: its 150 notifications are ahead of Y's in the queue
    const [xEvent] = await kit.fire([{ deviceId: x.device.id }]);
    const [yEvent] = await kit.fire([{ deviceId: y.device.id }]);
    const worker = await kit.worker(SLOTS, QUICK_CLOSE);
    await expectDelivered(y, yEvent.id);
    expect(ok.on('/ok/y')).toHaveLength(1);
    // X's calls: two (its endpoint's limit), all still hanging; its other notifications wait in the queue
    await waitFor(() => hang.received.length === 2, "X's calls");
    const xs = await kit.notificationsOf(xEvent.id);
    expect(xs).toHaveLength(150);
    expect(xs.filter((n) => n.state === 'queued' && n.attempts === 0)).toHaveLength(150);
    expect(hang.received).toHaveLength(2);
    expect(await worker.metrics!()).toMatch(/^drivewire_webhook_endpoints_full 1$/m);
  });

  it('holds at most its endpoint\'s limit of slots with notifications handed over at insert (stored leased to the worker)', async () => {
    const hang = await receiver();
    const ok = await receiver();
    const x = await hangingTenant(hang);
    const y = await kit.subscribed(`${ok.base}/ok/y`);
    await kit.worker(SLOTS, QUICK_CLOSE);
    const leasedFire = async (deviceId: string) => {
      const stored = await t.db.knex.transaction((trx) => t.repos.events.insert([{
        deviceId, vehicleId: null, timestamp: new Date(), eventType: 'startup', objectType: 'vehicle', objectId: null, meta: null,
      }], trx, kit.bus.handOffLeaseMs()));
      expect(stored[0].leased!.length).toBeGreaterThan(0);
      kit.bus.publishEvents(stored);
      return stored[0];
    };
    await leasedFire(x.device.id);
    const yEvent = await leasedFire(y.device.id);
    const [yn] = await kit.notificationsOf(yEvent.id);
    await waitFor(async () => (await kit.read(y.app, yn.id)).state === 'complete', "Y's webhook", 10_000);
    await waitFor(() => hang.received.length === 2, "X's calls");
    expect(ok.on('/ok/y')).toHaveLength(1);
    expect(hang.received).toHaveLength(2);
  });
});

describe('a receiver that answers within a second', () => {
  it('may take every free slot, beyond its endpoint\'s and application\'s shares, once its first call was answered', async () => {
    const r = await receiver();
    const y = await kit.subscribed(`${r.base}/slowok/y`);
    for (let i = 1; i < 40; i++) {
      await t.repos.subscriptions.create(y.app.principal, { deviceId: y.device.id, eventType: 'startup', url: `${r.base}/slowok/y`, object: null, appData: null });
    }
    await kit.worker(SLOTS, QUICK_CLOSE);
    const [first] = await kit.fire([{ deviceId: y.device.id }]);
    await waitFor(async () => (await kit.notificationsOf(first.id)).every((n) => n.state === 'complete'), 'the first 40 webhooks', 20_000);
    const [second] = await kit.fire([{ deviceId: y.device.id }]);
    await waitFor(async () => (await kit.notificationsOf(second.id)).every((n) => n.state === 'complete'), 'the next 40 webhooks', 20_000);
    // the first calls: at most the endpoint's share (2); once answered in 200 ms, up to every slot (8)
    expect(r.mostOpenSlowOk()).toBeGreaterThan(SLOTS.webhookApplicationConcurrency);
    expect(r.mostOpenSlowOk()).toBeLessThanOrEqual(SLOTS.webhookConcurrency);
  });
});

describe('a tenant with many receivers that never answer', () => {
  it("holds at most its application's share of slots, however many origins (ports) its subscriptions post to: another tenant's webhook is delivered", async () => {
    // 12 origins (a never-answering server on each of 12 ports), 3 subscriptions each: 36 notifications per event
    const hangs = await Promise.all(Array.from({ length: 12 }, () => receiver()));
    const ok = await receiver();
    const x = await kit.subscribed(`${hangs[0].base}/hang/x`);
    for (const [i, h] of hangs.entries()) {
      for (let k = i === 0 ? 1 : 0; k < 3; k++) {
        await t.repos.subscriptions.create(x.app.principal, { deviceId: x.device.id, eventType: 'startup', url: `${h.base}/hang/x`, object: null, appData: null });
      }
    }
    const y = await kit.subscribed(`${ok.base}/ok/y`);
    // X's event first: its 36 notifications are ahead of Y's in the queue, on 12 endpoints with room for 2 calls each
    const [xEvent] = await kit.fire([{ deviceId: x.device.id }]);
    const [yEvent] = await kit.fire([{ deviceId: y.device.id }]);
    const worker = await kit.worker(SLOTS, QUICK_CLOSE);
    await expectDelivered(y, yEvent.id);
    // X's calls: its application's share (4), all still hanging, however many claims ran since
    await waitFor(() => hangs.reduce((k, h) => k + h.received.length, 0) === 4, "X's calls");
    await claimRounds(worker, 5);
    expect(hangs.reduce((k, h) => k + h.received.length, 0)).toBe(4);
    const xs = await kit.notificationsOf(xEvent.id);
    expect(xs.filter((n) => n.state === 'queued' && n.attempts === 0)).toHaveLength(36);
  });
});

describe('a receiver answering with a NUL byte', () => {
  it('gets one attempt, recorded complete with the NUL stripped, and the notification moves on', async () => {
    const rx = await receiver();
    const { app, device } = await kit.subscribed(`${rx.base}/nul/a`);
    const [event] = await kit.fire([{ deviceId: device.id }]);
    // short leases: an attempt left unrecorded would be posted again within the test
    await kit.worker({}, { pollMs: 50, leaseMs: 300 });
    const [{ id }] = await kit.notificationsOf(event.id);
    const n = await waitFor(async () => { const x = await kit.read(app, id); return x.state === 'complete' && x; }, 'complete', 10_000);
    expect(n).toMatchObject({ responseCode: 200, response: 'oknul', attempts: 1 });
    expect(await t.repos.notifications.attempts(id)).toMatchObject([{ attempt: 1, outcome: 'complete', responseCode: 200, response: 'oknul' }]);
    expect(rx.on('/nul/a')).toHaveLength(1);
  });

  it('records a group of attempts whatever their responses: NUL, lone surrogates and an oversized text are stored sanitized and bounded, beside the others', async () => {
    const { app, device } = await kit.subscribed('http://127.0.0.1:9/never-called');
    for (let i = 0; i < 3; i++) {
      await t.repos.subscriptions.create(app.principal, { deviceId: device.id, eventType: 'startup', url: 'http://127.0.0.1:9/never-called', object: null, appData: null });
    }
    const [event] = await kit.fire([{ deviceId: device.id }]);
    const claimed = await t.repos.notifications.claim(10, 60_000);
    const mine = claimed.filter((c) => c.eventId === event.id);
    expect(mine).toHaveLength(4);
    const responses = ['fine', 'bad\u0000body\u0000', 'lone \ud800 high and \udc00 low, a pair 🚗 kept', 'x'.repeat(200_000)];
    const recorded = await t.repos.notifications.recordAttempts(mine.map((n, i) => ({
      id: n.id, previousAttempts: 0, body: Buffer.from('{}'),
      outcome: { state: 'complete', responseCode: 200, response: responses[i], notifiedAt: new Date(), respondedAt: new Date(), retryInMs: null },
    })));
    expect(recorded.size).toBe(4);
    const stored = await Promise.all(mine.map(async (n) => (await t.repos.notifications.attempts(n.id))[0].response));
    expect(stored.slice(0, 3)).toEqual(['fine', 'badbody', 'lone \ufffd high and \ufffd low, a pair 🚗 kept']);
    expect(stored[3]).toBe('x'.repeat(64 * 1024));
  });
});

describe('subscriptions per application', () => {
  it('refuses a subscription past the cap with 409 and the error body; another application is not affected; deleting one makes room', async () => {
    const capped = await buildTestApp({ maxSubscriptionsPerApplication: 2 });
    try {
      const app = await capped.make.application();
      const device = await capped.make.device(app.principal);
      const other = await capped.make.application();
      const otherDevice = await capped.make.device(other.principal);
      const post = (a: typeof app, deviceId: string) => capped.app.inject({
        method: 'POST', url: `/api/v1/devices/${deviceId}/subscriptions`, headers: { authorization: a.auth },
        payload: { subscription: { eventType: 'startup', url: 'http://[2606:4700:4700::1111]/hook' } },
      });
      const first = await post(app, device.id);
      expect(first.statusCode).toBe(201);
      expect((await post(app, device.id)).statusCode).toBe(201);
      const refused = await post(app, device.id);
      expect(refused.statusCode).toBe(409);
      expect(refused.json()).toEqual({
        statusCode: 409, error: 'Conflict',
        message: 'An application may have at most 2 subscriptions; delete one first',
      });
      expect((await post(other, otherDevice.id)).statusCode).toBe(201);
      const gone = await capped.app.inject({ method: 'DELETE', url: `/api/v1/subscriptions/${first.json().subscription.id}`, headers: { authorization: app.auth } });
      expect(gone.statusCode).toBe(204);
      expect((await post(app, device.id)).statusCode).toBe(201);
      expect(Number((await capped.db.knex('subscriptions').where({ application_id: app.id }).count({ n: '*' }))[0].n)).toBe(2);
    } finally {
      await capped.close();
    }
  });
});

describe('a subscription whose receiver keeps failing', () => {
  const PAUSING = { webhookPauseFailures: 3, webhookPauseAfterMs: 0, webhookMaxAttempts: 10, webhookBackoffMs: 20 };

  it('is paused after N consecutive failures, visibly, its notifications kept undelivered; resumed through PUT, they are delivered', async () => {
    const rx = await receiver();
    const { app, device, subscription } = await kit.subscribed(`${rx.base}/until/p`);
    expect(subscription.delivery).toEqual({ state: 'active', consecutiveFailures: 0, failingSince: null, pausedAt: null });
    const [a] = await kit.fire([{ deviceId: device.id }]);
    await kit.worker(PAUSING);
    const self = `/api/v1/subscriptions/${subscription.id}`;
    const paused = await waitFor(async () => {
      const s = (await api('GET', self, app.auth)).body.subscription;
      return s.delivery.state === 'paused' && s;
    }, 'paused', 10_000);
    expect(paused.delivery).toMatchObject({ state: 'paused', consecutiveFailures: 3 });
    expect(Date.parse(paused.delivery.pausedAt)).toBeGreaterThanOrEqual(Date.parse(paused.delivery.failingSince));
    // the listing shows it too
    const listed = (await api('GET', `/api/v1/devices/${device.id}/subscriptions`, app.auth)).body.subscriptions;
    expect(listed.map((s: { delivery: { state: string } }) => s.delivery.state)).toEqual(['paused']);

    // kept: the failed notification and one made while paused, neither posted again
    const [b] = await kit.fire([{ deviceId: device.id }]);
    const [na] = await kit.notificationsOf(a.id);
    const [nb] = await kit.notificationsOf(b.id);
    expect(await kit.read(app, na.id)).toMatchObject({ state: 'queued', attempts: 3, responseCode: 503, nextAttemptAt: null });
    expect(await kit.read(app, nb.id)).toMatchObject({ state: 'queued', attempts: 0 });
    const worker = kit.workers()[0];
    await claimRounds(worker, 5); // several polls, each past the retry delay
    expect(rx.on('/until/p')).toHaveLength(3);

    rx.heal('/until/p');
    const resumed = await api('PUT', self, app.auth, { subscription: { delivery: { state: 'active' } } });
    expect(resumed.status).toBe(200);
    expect(resumed.body.subscription.delivery).toEqual({ state: 'active', consecutiveFailures: 0, failingSince: null, pausedAt: null });
    await waitFor(async () => (await kit.read(app, na.id)).state === 'complete' && (await kit.read(app, nb.id)).state === 'complete', 'delivered after resume', 10_000);
    expect(await kit.read(app, na.id)).toMatchObject({ attempts: 4, responseCode: 200, response: 'healed' });
    expect(await kit.read(app, nb.id)).toMatchObject({ attempts: 1, responseCode: 200 });
    expect(rx.on('/until/p')).toHaveLength(5);
  });

  it('is not paused before the failures span the minimum time; a success resets the count', async () => {
    const rx = await receiver();
    const { app, device, subscription } = await kit.subscribed(`${rx.base}/until/q`);
    await kit.worker({ ...PAUSING, webhookPauseAfterMs: 3_600_000, webhookMaxAttempts: 4 });
    const [a] = await kit.fire([{ deviceId: device.id }]);
    const [na] = await kit.notificationsOf(a.id);
    await waitFor(async () => (await kit.read(app, na.id)).attempts === 4, 'attempts spent', 10_000);
    const failing = (await api('GET', `/api/v1/subscriptions/${subscription.id}`, app.auth)).body.subscription.delivery;
    expect(failing).toMatchObject({ state: 'active', consecutiveFailures: 4, pausedAt: null });
    expect(typeof failing.failingSince).toBe('string');

    rx.heal('/until/q');
    const [b] = await kit.fire([{ deviceId: device.id }]);
    const [nb] = await kit.notificationsOf(b.id);
    await waitFor(async () => (await kit.read(app, nb.id)).state === 'complete', 'delivered', 10_000);
    expect((await api('GET', `/api/v1/subscriptions/${subscription.id}`, app.auth)).body.subscription.delivery)
      .toEqual({ state: 'active', consecutiveFailures: 0, failingSince: null, pausedAt: null });
  });

  it('keeps a notification that was leased when its subscription was paused once it is given back, and delivers it after resume', async () => {
    const { app, device, subscription } = await kit.subscribed('http://127.0.0.1:9/leased');
    const [e] = await kit.fire([{ deviceId: device.id }]);
    const [n] = await kit.notificationsOf(e.id);
    expect((await t.repos.notifications.claim(10, 60_000)).map((c) => c.id)).toEqual([n.id]);
    const self = `/api/v1/subscriptions/${subscription.id}`;
    expect((await api('PUT', self, app.auth, { subscription: { delivery: { state: 'paused' } } })).status).toBe(200);
    await t.repos.notifications.release([n.id]); // a worker stopping mid-call, or giving back what it will not deliver
    expect(await t.repos.notifications.claim(10, 60_000)).toEqual([]);
    expect(await t.db.knex('notifications').where({ id: n.id }).first()).toMatchObject({ paused: true, next_attempt_at: null, locked_until: null });
    expect((await api('PUT', self, app.auth, { subscription: { delivery: { state: 'active' } } })).status).toBe(200);
    expect((await t.repos.notifications.claim(10, 60_000)).map((c) => c.id)).toEqual([n.id]);
  });

  it('can be paused and resumed by hand; an unknown state is refused with 400', async () => {
    const rx = await receiver();
    const { app, device, subscription } = await kit.subscribed(`${rx.base}/ok/hand`);
    const self = `/api/v1/subscriptions/${subscription.id}`;
    const paused = await api('PUT', self, app.auth, { subscription: { delivery: { state: 'paused' } } });
    expect(paused.status).toBe(200);
    expect(paused.body.subscription.delivery).toMatchObject({ state: 'paused', consecutiveFailures: 0 });
    const worker = await kit.worker({}, { pollMs: 50 });
    const [e] = await kit.fire([{ deviceId: device.id }]);
    const [n] = await kit.notificationsOf(e.id);
    await claimRounds(worker, 5);
    expect(await kit.read(app, n.id)).toMatchObject({ state: 'queued', attempts: 0 });
    expect(rx.on('/ok/hand')).toHaveLength(0);
    const bad = await api('PUT', self, app.auth, { subscription: { delivery: { state: 'sleeping' } } });
    expect(bad).toEqual({ status: 400, body: { statusCode: 400, error: 'Bad Request', message: 'delivery.state must be "active" or "paused", got "sleeping"' } });
    expect((await api('PUT', self, app.auth, { subscription: { delivery: { state: 'active' } } })).status).toBe(200);
    await waitFor(async () => (await kit.read(app, n.id)).state === 'complete', 'delivered after resume', 10_000);
    expect(rx.on('/ok/hand')).toHaveLength(1);
  });
});
