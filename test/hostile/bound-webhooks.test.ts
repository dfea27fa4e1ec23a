import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { startReceiver, waitFor, type Receiver } from '../workers/receiver.js';
import { deliveryKit } from '../workers/helpers.js';
import { verifyWebhook } from '../../lib/webhook-signature.js';

/**
 * Over real HTTP: the API refuses webhook URLs on non-public addresses in
 * every spelling, accepts names that do not resolve yet and records at delivery why a call was not
 * made; deliveries carry a timestamped signature a receiver verifies and a notification id it
 * dedupes by; appData is bounded.
 */
let t: TestApp;
let base: string;
let rx: Receiver;
const kit = deliveryKit(() => t);
beforeAll(async () => {
  t = await buildTestApp({ allowPrivateWebhooks: false });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
});
afterEach(async () => { await kit.closeWorkers(); await rx?.close(); });
afterAll(async () => { await t?.close(); });

async function api(method: string, path: string, auth: string, body?: unknown) {
  const res = await fetch(`${base}${path}`, {
    method, headers: { authorization: auth, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined, signal: AbortSignal.timeout(5_000),
  });
  return { status: res.status, body: await res.json().catch(() => null) };
}

async function appWithDevice() {
  const app = await t.make.application();
  const device = await t.make.device(app.principal);
  const subscribe = (subscription: Record<string, unknown>) =>
    api('POST', `/api/v1/devices/${device.id}/subscriptions`, app.auth, { subscription: { eventType: 'startup', ...subscription } });
  return { app, device, subscribe };
}

/** A notification of a fresh startup event, once it reached `state`. */
async function notified(app: { auth: string }, deviceId: string, state: string) {
  const vehicle = randomUUID();
  const [event] = await kit.fire([{ deviceId, vehicleId: vehicle, objectId: vehicle }]);
  const [{ id }] = await kit.notificationsOf(event.id);
  return waitFor(async () => {
    const n = (await api('GET', `/api/v1/notifications/${id}`, app.auth)).body.notification;
    return n.state === state && n;
  }, `notification ${state}`, 10_000);
}

describe('webhook addresses', () => {
  it('refuses a callback URL on a non-public address in every spelling: mapped, translated, NAT64, 6to4, numeric IPv4, link-local, unique-local, metadata', async () => {
    const { subscribe } = await appWithDevice();
    const urls = [
      'http://[::ffff:0:7f00:1]/', 'http://[::ffff:127.0.0.1]/', 'http://[::ffff:7f00:1]/', 'http://[::ffff:a9fe:a9fe]/',
      'http://[64:ff9b::7f00:1]/', 'http://[64:ff9b::a9fe:a9fe]/', 'http://[64:ff9b:1::a00:1]/', 'http://[64:ff9b:1:ffff::8.8.8.8]/',
      'http://[2002:7f00:1::]/', 'http://[2002:c0a8:101::1]/', 'http://[::127.0.0.1]/',
      'http://2130706433/', 'http://0x7f000001/', 'http://0177.0.0.1/', 'http://127.1/', 'http://0/', 'http://017700000001/',
      'http://169.254.169.254/latest/meta-data/', 'http://[fd00:ec2::254]/', 'http://100.100.100.200/', 'http://[fe80::1]/',
      'http://[fc00::1]/', 'http://10.1.2.3/', 'http://192.168.1.1:8080/', 'http://[::1]/', 'http://[3fff::1]/', 'http://localhost:8080/',
    ];
    for (const url of urls) {
      const res = await subscribe({ url });
      expect(res.status, url).toBe(400);
      expect(res.body.message, url).toMatch(/url is refused: .*non-public address/);
    }
    expect((await subscribe({ url: 'http://[2606:4700:4700::1111]/hook' })).status).toBe(201);
  });

  it('accepts a URL whose host does not resolve yet, and records at delivery why no call was made (unresolved, or resolving to a private address)', async () => {
    const { app, device, subscribe } = await appWithDevice();
    const later = await subscribe({ url: 'http://hooks.drivewire-not-yet.invalid/notify' });
    expect(later.status).toBe(201);
    await kit.worker({ webhookMaxAttempts: 1 });
    const n = await notified(app, device.id, 'error');
    expect(n).toMatchObject({ responseCode: null, attempts: 1 });
    // ENOTFOUND with a resolver, EAI_AGAIN on a machine without one.
    expect(n.response).toMatch(/^host hooks\.drivewire-not-yet\.invalid could not be resolved \((ENOTFOUND|EAI_AGAIN)\); it is resolved and checked again at the next attempt$/);

    // A name that resolved elsewhere at creation and now answers a private address (DNS rebinding)
    // is refused at delivery: the address checked is the address connected to, so no call reaches it.
    rx = await startReceiver();
    const other = await t.make.device(app.principal);
    const port = new URL(rx.base).port;
    await t.repos.subscriptions.create(app.principal, { deviceId: other.id, eventType: 'startup', url: `http://localhost:${port}/ok/rebound`, object: null, appData: null });
    const refused = await notified(app, other.id, 'error');
    expect(refused.response).toBe('refused: localhost resolves to 127.0.0.1, a loopback, private, link-local or otherwise non-public address');
    expect(rx.received).toHaveLength(0);
  });
});

describe('webhook signatures and duplicates', () => {
  it('signs a timestamp with the body (t=…,v1=…) so a receiver verifies it within a tolerance and refuses a replay, and carries the notification id in the body and a header', async () => {
    const { app, device } = await appWithDevice();
    rx = await startReceiver({ secret: app.webhookSecret, toleranceS: 300 });
    // The receiver is on 127.0.0.1: the subscription is stored directly and the worker allows private addresses.
    await t.repos.subscriptions.create(app.principal, { deviceId: device.id, eventType: 'startup', url: `${rx.base}/signed/a`, object: null, appData: null });
    await kit.worker({ allowPrivateWebhooks: true, webhookMaxAttempts: 1 });
    const n = await notified(app, device.id, 'complete');
    expect(n).toMatchObject({ responseCode: 200, response: 'accepted' });

    const [got] = rx.on('/signed/a');
    expect(got.body).toBe(n.payload); // the stored payload is byte for byte the body posted
    expect(JSON.parse(got.body).notification.id).toBe(n.id);
    expect(got.headers['x-drivewire-notification-id']).toBe(n.id);
    const header = got.headers['x-drivewire-signature'] as string;
    expect(header).toMatch(/^t=\d{10},v1=[0-9a-f]{64}$/);
    const t0 = Number(/t=(\d+)/.exec(header)![1]);
    expect(Math.abs(t0 - Date.now() / 1000)).toBeLessThan(30);
    expect(verifyWebhook(got.body, header, app.webhookSecret)).toEqual({ ok: true, timestamp: t0 });

    // A captured delivery replayed later than the tolerance, a changed body or another key is refused.
    expect(verifyWebhook(got.body, header, app.webhookSecret, { now: t0 + 301 })).toMatchObject({ ok: false, reason: expect.stringMatching(/tolerance/) });
    expect(verifyWebhook(got.body.replace('startup', 'shutdown'), header, app.webhookSecret)).toMatchObject({ ok: false });
    expect(verifyWebhook(got.body, header, 'another secret')).toMatchObject({ ok: false });
    expect(verifyWebhook(got.body, `sha256=${header.split('v1=')[1]}`, app.webhookSecret)).toMatchObject({ ok: false });

    // At-least-once delivery: the same notification posted again is recognised by its id and dropped.
    const again = await fetch(`${rx.base}/signed/a`, { method: 'POST', headers: { ...got.headers as Record<string, string> }, body: got.body });
    expect(await again.text()).toBe('duplicate');
    expect(rx.accepted.size).toBe(1);
  });
});

describe('subscription appData', () => {
  it('refuses appData over 16 KB with 413 naming the field and the limit, on create and on update', async () => {
    const { app, subscribe } = await appWithDevice();
    const url = 'http://[2606:4700:4700::1111]/hook';
    const tooBig = 'é'.repeat(8 * 1024 + 1); // 16,386 bytes in UTF-8
    const created = await subscribe({ url, appData: tooBig });
    expect(created).toEqual({ status: 413, body: {
      statusCode: 413, error: 'Payload Too Large', message: 'appData is too large: 16386 bytes; at most 16384 bytes (16 KB) are accepted',
    } });
    const ok = await subscribe({ url, appData: 'x'.repeat(16 * 1024) });
    expect(ok.status).toBe(201);
    const id = ok.body.subscription.id;
    const updated = await api('PUT', `/api/v1/subscriptions/${id}`, app.auth, { subscription: { appData: 'y'.repeat(16 * 1024 + 1) } });
    expect(updated.status).toBe(413);
    expect(updated.body.message).toMatch(/^appData is too large: 16385 bytes/);
    expect((await api('GET', `/api/v1/subscriptions/${id}`, app.auth)).body.subscription.appData).toBe('x'.repeat(16 * 1024));
  });
});
