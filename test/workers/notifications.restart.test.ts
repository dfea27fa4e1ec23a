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

const stateOf = async (id: string) => (await t.db.knex('notifications').where({ id }).first()).state as string;

describe('durable delivery', () => {
  it('delivers notifications queued while no worker ran, once a worker starts', async () => {
    const first = await kit.worker();
    await first.close();
    const { device } = await kit.subscribed(`${rx.base}/ok/later`);
    const [event] = await kit.fire([{ deviceId: device.id }]);
    const [{ id }] = await kit.notificationsOf(event.id);
    expect(await stateOf(id)).toBe('queued');
    await kit.worker();
    await waitFor(async () => (await stateOf(id)) === 'complete', 'delivery by the new worker');
    expect(rx.on('/ok/later')).toHaveLength(1);
  });

  it("delivers a notification claimed by a worker that crashed, once the claim's lease expires", async () => {
    const { device } = await kit.subscribed(`${rx.base}/ok/crashed`);
    const [event] = await kit.fire([{ deviceId: device.id }]);
    const [{ id }] = await kit.notificationsOf(event.id);
    const claimed = await t.repos.notifications.claim(100, 300); // the crashed worker's claim, never finished
    expect(claimed.map((c) => c.id)).toContain(id);
    expect(await t.repos.notifications.claim(100, 300)).toEqual([]);
    await kit.worker();
    await waitFor(async () => (await stateOf(id)) === 'complete', 'delivery after the lease');
    expect(rx.on('/ok/crashed')).toHaveLength(1);
    expect((await t.db.knex('notifications').where({ id }).first()).attempts).toBe(1);
  });

  it('a worker stopped during a call gives the notification back, and the next worker delivers it', async () => {
    const { device } = await kit.subscribed(`${rx.base}/hold/stopped`);
    const [event] = await kit.fire([{ deviceId: device.id }]);
    const [{ id }] = await kit.notificationsOf(event.id);
    const worker = await kit.worker({}, { pollMs: 50, closeTimeoutMs: 100 });
    await waitFor(() => rx.on('/hold/stopped').length === 1, 'the first call');
    await worker.close();
    const row = await t.db.knex('notifications').where({ id }).first();
    expect([row.state, row.attempts, row.locked_until]).toEqual(['queued', 0, null]);
    await kit.worker();
    await waitFor(() => rx.on('/hold/stopped').length === 2, 'the second call');
    rx.release('/hold/stopped');
    await waitFor(async () => (await stateOf(id)) === 'complete', 'delivery by the next worker');
    expect((await t.repos.notifications.attempts(id)).map((a) => a.outcome)).toEqual(['complete']);
  });

  it('two workers sharing the queue deliver each notification exactly once', async () => {
    const { device } = await kit.subscribed(`${rx.base}/ok/shared`);
    await kit.worker({ webhookConcurrency: 3 });
    await kit.worker({ webhookConcurrency: 3 });
    const events = await kit.fire(Array.from({ length: 60 }, (_, i) => ({ deviceId: device.id, timestamp: new Date(Date.UTC(2026, 2, 1, 10, i)) })));
    const ids = (await t.db.knex('notifications').whereIn('event_id', events.map((e) => e.id))).map((r) => r.id);
    expect(ids).toHaveLength(60);
    await waitFor(async () => (await t.db.knex('notifications').whereIn('id', ids).where({ state: 'complete' })).length === 60, 'all 60');
    const delivered = rx.on('/ok/shared').map((r) => r.headers['x-drivewire-notification-id']);
    expect(delivered.sort()).toEqual([...ids].sort());
  });
});

describe('private addresses at delivery time (allowPrivateWebhooks false)', () => {
  it('refuses to call a URL on a loopback address or a name that resolves to one, and sends nothing', async () => {
    const port = new URL(rx.base).port;
    const literal = await kit.subscribed(`${rx.base}/ok/private-literal`);
    const named = await kit.subscribed(`http://localhost:${port}/ok/private-name`);
    const [e1] = await kit.fire([{ deviceId: literal.device.id }]);
    const [e2] = await kit.fire([{ deviceId: named.device.id }]);
    await kit.worker({ allowPrivateWebhooks: false, webhookMaxAttempts: 1 });
    const [{ id: id1 }] = await kit.notificationsOf(e1.id);
    const [{ id: id2 }] = await kit.notificationsOf(e2.id);
    const n1 = await waitFor(async () => { const x = await kit.read(literal.app, id1); return x.state === 'error' && x; }, 'refusal 1');
    const n2 = await waitFor(async () => { const x = await kit.read(named.app, id2); return x.state === 'error' && x; }, 'refusal 2');
    expect(n1).toMatchObject({ responseCode: null, response: 'refused: 127.0.0.1 is a loopback, private, link-local or otherwise non-public address' });
    expect(n2.responseCode).toBeNull();
    expect(n2.response).toMatch(/^refused: localhost resolves to (127\.0\.0\.1|::1), a loopback, private, link-local or otherwise non-public address$/);
    expect(rx.on('/ok/private-literal')).toEqual([]);
    expect(rx.on('/ok/private-name')).toEqual([]);
  });
});
