// Scale-out end to end (docs/operations/scale-out.md): one `--only api`, two `--only gateway` sharing Redis (one with a clock 10 s behind)
// and two `--only workers`, each a real process on its own empty data dir, on one PostgreSQL. Runs only
// with TEST_DATABASE_URL and TEST_REDIS_URL (several processes cannot share PGlite).
import fs from 'node:fs';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { connectAsync, type MqttClient } from 'mqtt';
import { repositories, type Repositories } from '../../db/index.js';
import { readCredentials, type Credentials } from '../../bin/credentials.js';
import { createTestDb } from '../helpers/db.js';
import { deleteRedisPrefix } from '../helpers/gateway.js';
import { startReceiver, waitFor, type Receiver } from '../workers/receiver.js';
import { startTestBroker } from '../simulator/scheduler-broker.js';
import { serve, type Served } from './support/processes.js';
import { loadStoredRoutes } from '../../simulator/route.js';

const redisUrl = process.env.TEST_REDIS_URL;
const enabled = Boolean(redisUrl && process.env.TEST_DATABASE_URL);
const VIN = 'VV1AB2CD3EF456789';

describe.runIf(enabled)('scale-out: api + two gateways + two workers as separate processes', () => {
  const prefix = `drivewire-scale-${randomUUID()}`;
  let db: Awaited<ReturnType<typeof createTestDb>>;
  let repos: Repositories;
  let api: Served;
  let gw1: Served;
  let gw2: Served;
  let workers: Served[] = [];
  let creds: Credentials;
  let auth: string;
  let receiver: Receiver;

  beforeAll(async () => {
    db = await createTestDb();
    repos = repositories(db.knex);
    receiver = await startReceiver();
    const url = new URL(redisUrl!);
    url.searchParams.set('prefix', prefix);
    const common = ['--database-url', db.url!];
    api = await serve('api', [...common, '--allow-private-webhooks']);
    const gateway = [...common, '--mqtt-redis-url', url.toString()];
    gw1 = await serve('gateway', gateway);
    gw2 = await serve('gateway', gateway, { DRIVEWIRE_TEST_CLOCK_OFFSET_MS: '-10000' });
    workers = await Promise.all([0, 1].map(() => serve('workers', [...common, '--allow-private-webhooks'], { DRIVEWIRE_WEBHOOK_BACKOFF_MS: '100' })));
    creds = readCredentials(api.dataDir)!;
    auth = `Basic ${Buffer.from(`${creds.application!.id}:${creds.application!.secret}`).toString('base64')}`;
  }, 360_000);

  afterAll(async () => {
    await Promise.all([...workers, gw1, gw2, api].filter(Boolean).map((p) => p.stop()));
    await receiver?.close();
    await db?.close();
    if (redisUrl) await deleteRedisPrefix(redisUrl, prefix);
  }, 60_000);

  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${api.http}${path}`, {
      method, headers: { authorization: auth, ...(body ? { 'content-type': 'application/json' } : {}) }, body: body ? JSON.stringify(body) : undefined,
    });
    return { status: res.status, body: res.status === 204 ? null : await res.json() };
  };
  const device = async () => {
    const owner = await repos.devices.createOwner({ name: 'scale' });
    const { device: d, secret } = await repos.devices.provision({ name: 'scale', ownerId: owner.id });
    await repos.devices.authorize(d.id, creds.application!.id);
    await repos.devices.register(creds.application!.id, d.id);
    return { id: d.id, secret };
  };
  const connect = (gw: Served, d: { id: string; secret: string }) =>
    connectAsync(gw.mqtt!, { clientId: d.id, username: d.id, password: d.secret, reconnectPeriod: 0 });
  const publish = (client: MqttClient, id: string, frames: { id: string; ts: number }[]) =>
    client.publishAsync(`devices/${id}/frames`, JSON.stringify(frames.map((f) => ({ ...f, pids: { '0D': '3C' } }))), { qos: 1 });

  it('configures each part without breaking the others: no rotation, URLs merged by role, per-role banners', async () => {
    expect(creds).toMatchObject({ database: expect.stringMatching(/^\d+\/.+/), apiUrl: api.http, mqttUrl: null, adminToken: expect.any(String), application: { secret: expect.any(String) } });
    for (const gw of [gw1, gw2]) {
      expect(readCredentials(gw.dataDir)).toEqual({ database: creds.database, apiUrl: null, mqttUrl: gw.mqtt, adminToken: null, application: null });
    }
    for (const w of workers) expect(fs.existsSync(`${w.dataDir}/credentials.json`)).toBe(false);
    // The secret the API's clients hold still works after every other part started.
    expect((await call('GET', '/api/v1/devices')).status).toBe(200);
    expect(api.stdout()).toContain('Try: curl');
    for (const p of [gw1, gw2, ...workers]) {
      expect(p.stdout()).not.toMatch(/Try: curl|\n {2}API |secret/);
      expect(p.stdout()).toMatch(/\n {2}health +http:/);
    }
    expect(gw1.stdout()).toMatch(/\n {2}mqtt +mqtt:\/\/127\.0\.0\.1:\d+/);
    expect(workers[0].stdout()).toContain('workers    webhook notifications, simulator runs');
  });

  it('closes a device session on a gateway process at once when the API process rotates its secret; the new secret connects to either', async () => {
    const d = await device();
    const client = await connect(gw2, d);
    client.on('error', () => undefined);
    const closed = new Promise<number>((resolve) => client.once('close', () => resolve(Date.now())));
    const started = Date.now();
    const res = await fetch(`${api.http}/admin/v1/devices/${d.id}/secret`, { method: 'POST', headers: { authorization: `Bearer ${creds.adminToken}` } });
    expect(res.status).toBe(200);
    const { device: { secret } } = await res.json() as { device: { secret: string } };
    expect(await closed - started).toBeLessThan(3000); // the NOTIFY, not the 10 s periodic check
    const renewed = await connect(gw1, { id: d.id, secret });
    await publish(renewed, d.id, [{ id: 'renewed', ts: Date.now() - 1000 }]);
    expect(await db.knex('messages').where('device_id', d.id).count('* as n').first()).toEqual({ n: 1 });
    await renewed.endAsync();
  }, 30_000);

  it('streams every message once, in commit order: an 8 s late commit and a gateway clock 10 s behind; nothing from before the subscription', async () => {
    const a = await device(); // on gateway 1, whose batch is held 8 s
    const b = await device(); // on gateway 2, whose clock is 10 s behind
    const ca = await connect(gw1, a);
    const cb = await connect(gw2, b);
    const base = Date.now() - 60_000;
    await publish(ca, a.id, [0, 1, 2].map((i) => ({ id: `before-${i}`, ts: base + i })));

    const ws = new WebSocket(`${api.http.replace('http', 'ws')}/api/v1/messages`, { headers: { authorization: auth } });
    const pubs: { device: string; timestamp: string }[] = [];
    const acks = new Set<string>();
    ws.on('message', (raw) => {
      const f = JSON.parse(String(raw));
      if (f.type === 'pub') pubs.push({ device: f.subject.id, timestamp: f.payload.timestamp });
      if (f.type === 'sub' && f.payload?.ack) acks.add(f.subject.id);
    });
    await new Promise((r) => ws.once('open', r));
    for (const d of [a, b]) ws.send(JSON.stringify({ type: 'sub', subject: { type: 'device', id: d.id } }));
    await waitFor(() => acks.size === 2, 'subscription acks');

    // A lock on device A's message count (as a slow statement or a long transaction would hold; every batch of A's
    // messages updates that row, migration 013) stalls gateway 1's batch.
    let release!: () => void;
    const held = new Promise<void>((r) => { release = r; });
    const locked = new Promise<void>((locking) => {
      void db.knex.transaction(async (trx) => {
        await trx.raw('SELECT 1 FROM device_message_counts WHERE device_id = ? FOR UPDATE', [a.id]);
        locking();
        await held;
      });
    });
    await locked;
    const late = Array.from({ length: 10 }, (_, i) => ({ id: `late-${i}`, ts: base + 1000 + i }));
    const lateSent = Date.now();
    const lateAck = publish(ca, a.id, late).then(() => Date.now() - lateSent);
    const flowing: number[] = [];
    const started = Date.now();
    for (let i = 0; Date.now() - started < 8_000; i++) {
      const frames = [0, 1].map((k) => ({ id: `flow-${i}-${k}`, ts: base + 2000 + i * 2 + k }));
      await publish(cb, b.id, frames);
      flowing.push(...frames.map((f) => f.ts));
      await new Promise((r) => setTimeout(r, 250));
    }
    release();
    expect(await lateAck).toBeGreaterThan(7_500); // gateway 1 acknowledged (committed) the batch only after the lock

    const iso = (ts: number) => new Date(ts).toISOString();
    await waitFor(() => pubs.filter((p) => p.device === a.id).length >= 10 && pubs.filter((p) => p.device === b.id).length >= flowing.length,
      'every message on the stream', 20_000);
    await new Promise((r) => setTimeout(r, 1500)); // anything more would be a duplicate
    expect(pubs.filter((p) => p.device === a.id).map((p) => p.timestamp)).toEqual(late.map((f) => iso(f.ts)));
    expect(pubs.filter((p) => p.device === b.id).map((p) => p.timestamp)).toEqual(flowing.map(iso));
    // The stalled batch committed after the flowing ones: the stream follows commits, not receipt times.
    const stored = await db.knex('messages').where('device_id', b.id).min('received_at as at').first();
    expect(new Date(stored!.at).getTime()).toBeLessThan(started - 5000); // gateway 2 stamped receipt 10 s behind
    ws.close();
    await Promise.all([ca.endAsync(), cb.endAsync()]);
  }, 60_000);

  it('runs dummies through the gateway the gateways announced; a broker that is not the platform\'s fails the run with the reason; webhook links name the API', async () => {
    const newDummy = async () => (await call('POST', '/api/v1/dummies', { dummy: { name: `scale-${randomUUID().slice(0, 6)}` } })).body.dummy;
    const dummy = await newDummy();
    const sub = await call('POST', `/api/v1/devices/${dummy.deviceId}/subscriptions`, { subscription: { eventType: 'startup', url: `${receiver.base}/ok/startup` } });
    expect(sub.status).toBe(201);
    const route = (await loadStoredRoutes()).find((r) => r.name === 'DFW - Back Home')!;
    const finished = async (dummyId: string, runId: string) => waitFor(async () => {
      const { body: { run } } = await call('GET', `/api/v1/dummies/${dummyId}/runs/${runId}`);
      return run.status.state === 'finished' ? run : null;
    }, 'the run to finish', 60_000);

    const good = await call('POST', `/api/v1/dummies/${dummy.id}/runs`, { run: { vin: VIN, routeId: route.id, speed: 60 } });
    expect(good.status).toBe(201);
    const done = await finished(dummy.id, good.body.run.id);
    expect(done.status).toMatchObject({ outcome: 'completed' });
    expect(await db.knex('messages').where('device_id', dummy.deviceId).count('* as n').first()).toEqual({ n: done.status.framesSent });

    // Webhook payload links use the API's URL, not a worker's own port.
    const hook = await waitFor(() => receiver.on('/ok/startup')[0], 'the startup webhook', 30_000);
    const ports = [...hook.body.matchAll(/http:\/\/(?:localhost|127\.0\.0\.1):(\d+)/g)].map((m) => m[1])
      .filter((p) => `http://127.0.0.1:${p}` !== receiver.base);
    expect(ports.length).toBeGreaterThan(0);
    expect(new Set(ports)).toEqual(new Set([new URL(api.http).port]));

    // Another broker announced as the gateway (a misconfigured --mqtt-public-url): it acknowledges, stores nothing.
    const foreign = await startTestBroker(repos);
    const announced = (await db.knex('deployment_urls').where({ kind: 'mqtt' }).first()).url;
    try {
      await db.knex('deployment_urls').where({ kind: 'mqtt' }).update({ url: foreign.url });
      await new Promise((r) => setTimeout(r, 200));
      const other = await newDummy();
      const bad = await call('POST', `/api/v1/dummies/${other.id}/runs`, { run: { vin: VIN, routeId: route.id, speed: 60 } });
      expect(bad.status).toBe(201);
      const failed = await finished(other.id, bad.body.run.id);
      expect(failed.status).toMatchObject({ outcome: 'failed' });
      expect(failed.status.error).toMatch(/acknowledged \d+ frames but the platform stored 0: it is not this platform's gateway/);
    } finally {
      await db.knex('deployment_urls').where({ kind: 'mqtt' }).update({ url: announced });
      await foreign.close();
    }
  }, 150_000);
});
