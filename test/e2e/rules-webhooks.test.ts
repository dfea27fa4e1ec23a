import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { verifyWebhook } from '../../lib/webhook-signature.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lib/config.js';
import { silentLogger } from '../../lib/logger.js';
import { startPlatform, type Platform } from '../../bin/platform.js';
import { loadStoredRoutes, decodeRoute } from '../../simulator/route.js';
import { startDevice } from '../../simulator/device.js';
import { createTestDb } from '../helpers/db.js';
import { startReceiver, waitFor, type Receiver } from '../workers/receiver.js';

/**
 * Rules end to end: a dummy device drives a stored route over MQTT into the real gateway; rules
 * are evaluated at ingest; events are delivered to a real HTTP receiver by the notification worker.
 */
let db: Awaited<ReturnType<typeof createTestDb>>;
let p: Platform;
let receiver: Receiver;
let dataDir: string;
let auth: string;

const api = async (method: string, url: string, body?: unknown) => {
  const res = await fetch(`${p.apiUrl}${url}`, {
    method, headers: { authorization: auth, ...(body ? { 'content-type': 'application/json' } : {}) }, body: body ? JSON.stringify(body) : undefined,
  });
  return { status: res.status, body: res.status === 204 ? null : await res.json() };
};

beforeAll(async () => {
  db = await createTestDb();
  receiver = await startReceiver();
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-e2e-rules-'));
  p = await startPlatform(loadConfig({
    httpPort: 0, mqttPort: 0, host: '127.0.0.1', mqttHost: '127.0.0.1', dataDir, logLevel: 'silent',
    allowPrivateWebhooks: true, webhookTimeoutMs: 1500, webhookMaxAttempts: 3, webhookBackoffMs: 50,
  }, {}), silentLogger, { db });
  const app = p.credentials.application;
  auth = `Basic ${Buffer.from(`${app.id}:${app.secret}`).toString('base64')}`;
});
afterAll(async () => {
  await p?.close(); await receiver?.close(); await db?.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

describe('rules → events → webhooks, driven by the simulator', () => {
  it('delivers the rule transitions a drive implies, with exact bodies, and records failures', async () => {
    const app = p.credentials.application;
    const owner = await p.repos.devices.createOwner({ name: 'QA' });
    const { device, secret } = await p.repos.devices.provision({ name: 'e2e dummy', ownerId: owner.id });
    await p.repos.devices.authorize(device.id, app.id);
    await p.repos.devices.register(app.id, device.id);

    const route = (await loadStoredRoutes()).find((r) => r.name === 'DFW - Back Home')!;
    const coords = decodeRoute(route).coordinates;
    const [startLon, startLat] = coords[0];
    const [endLon, endLat] = coords.at(-1)!;
    const d = 0.0006; // ≈ 60 m box around the end of the route
    const rules = {
      depot: (await api('POST', `/api/v1/devices/${device.id}/rules`, { rule: { name: 'depot', boundaries: [{ type: 'radius', lon: startLon, lat: startLat, radius: 50 }] } })).body.rule,
      home: (await api('POST', `/api/v1/devices/${device.id}/rules`, { rule: { name: 'home', boundaries: [{ type: 'polygon', coordinates: [[
        [endLon - d, endLat - d], [endLon + d, endLat - d], [endLon + d, endLat + d], [endLon - d, endLat + d], [endLon - d, endLat - d]]] }] } })).body.rule,
      moving: (await api('POST', `/api/v1/devices/${device.id}/rules`, { rule: { name: 'moving', boundaries: [{ type: 'parametric', parameter: 'vehicleSpeed', min: 8, max: null }] } })).body.rule,
    };
    for (const rule of Object.values(rules)) {
      const res = await api('POST', `/api/v1/devices/${device.id}/subscriptions`, {
        subscription: { eventType: 'rule-*', url: `${receiver.base}/ok/${rule.name}`, object: { type: 'rule', id: rule.id }, appData: `{"rule":"${rule.name}"}` },
      });
      expect(res.status).toBe(201);
    }
    await api('POST', `/api/v1/devices/${device.id}/subscriptions`, { subscription: { eventType: 'startup', url: `${receiver.base}/fail/startup` } });
    await api('POST', `/api/v1/devices/${device.id}/subscriptions`, { subscription: { eventType: 'shutdown', url: `${receiver.base}/hang/shutdown` } });

    const mqttUrl = p.parts.find((x) => x.urls?.mqtt)!.urls!.mqtt;
    const drive = startDevice({ mqttUrl, deviceId: device.id, secret, route, vin: 'VV1DUMMYV1N000001', speed: 40 });
    const summary = await drive.done;
    expect(summary.framesSent).toBeGreaterThan(25);

    const ruleEvents = async (ruleId: string) =>
      (await api('GET', `/api/v1/devices/${device.id}/events?type=rule-*&objectId=${ruleId}&limit=100`)).body.events.reverse()
        .map((e: any) => `${e.eventType}${e.meta.firstEval ? ' (first)' : ''}`);
    expect(await ruleEvents(rules.depot.id)).toEqual(['rule-enter (first)', 'rule-leave']);
    expect(await ruleEvents(rules.home.id)).toEqual(['rule-leave (first)', 'rule-enter']);
    expect(await ruleEvents(rules.moving.id)).toEqual(['rule-leave (first)', 'rule-enter', 'rule-leave']);

    // Every rule event is POSTed once to its receiver, byte for byte the stored payload, signed.
    const webhookSecret = (await p.repos.applications.webhookSecret(app.id))!;
    for (const rule of Object.values(rules)) {
      const sub = (await api('GET', `/api/v1/devices/${device.id}/subscriptions?objectType=rule&objectId=${rule.id}`)).body.subscriptions[0];
      const notes = await waitFor(async () => {
        const list = (await api('GET', `/api/v1/subscriptions/${sub.id}/notifications`)).body.notifications;
        return list.length >= 2 && list.every((n: any) => n.state === 'complete') ? list : null;
      }, `notifications of ${rule.name}`, 30_000);
      // One POST per recorded attempt: an attempt that timed out on a loaded machine is retried, and
      // the receiver then sees the same bytes twice (receivers deduplicate on the notification id).
      const bodies = receiver.on(`/ok/${rule.name}`);
      expect(bodies).toHaveLength(notes.reduce((sum: number, n: any) => sum + n.attempts, 0));
      for (const n of notes) {
        const got = bodies.find((b) => b.body === n.payload);
        expect(got, `payload of ${n.id}`).toBeDefined();
        expect(verifyWebhook(got!.body, got!.headers['x-drivewire-signature'] as string, webhookSecret)).toMatchObject({ ok: true });
        expect(n).toMatchObject({ responseCode: 201, response: '{"status":"success"}', url: `${receiver.base}/ok/${rule.name}` });
        const payload = JSON.parse(n.payload);
        expect(payload.notification.subscription).toMatchObject({ id: sub.id, appData: `{"rule":"${rule.name}"}` });
        expect(payload.notification.event).toMatchObject({ id: n.eventId, deviceId: device.id, eventType: n.eventType });
        expect(typeof payload.notification.event.storageLatency).toBe('number');
      }
    }

    // A receiver answering 500 gives `error` after the retries; one that never answers gives `error` after the timeout.
    const byType = async (type: string) => {
      const ev = (await api('GET', `/api/v1/devices/${device.id}/events?type=${type}`)).body.events[0];
      return waitFor(async () => {
        const n = (await api('GET', `/api/v1/events/${ev.id}/notifications`)).body.notifications[0];
        return n && n.state === 'error' && n.attempts >= 3 && !n.nextAttemptAt ? n : null;
      }, `final ${type} notification`, 30_000);
    };
    const failed = await byType('startup');
    expect(failed).toMatchObject({ state: 'error', responseCode: 500, response: 'receiver failed', attempts: 3 });
    expect(receiver.on('/fail/startup')).toHaveLength(3);
    const hung = await byType('shutdown');
    expect(hung).toMatchObject({ state: 'error', responseCode: null, attempts: 3 });
  });
});
