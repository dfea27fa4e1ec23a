// Commands and presence across processes (docs/concepts/commands-and-presence.md): one `--only api`, two `--only
// gateway` sharing Redis and one `--only workers`, each a real process, on one PostgreSQL. A command created on the API
// reaches the device on whichever gateway holds it; a device that moves between gateways stays online; SIGKILL of its
// gateway makes it offline once (the others notice the missing heartbeat) and online once on the other. Runs only
// with TEST_DATABASE_URL and TEST_REDIS_URL (several processes cannot share PGlite).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectAsync, type MqttClient } from 'mqtt';
import { repositories, type Repositories } from '../../db/index.js';
import { readCredentials, type Credentials } from '../../bin/credentials.js';
import { createTestDb } from '../helpers/db.js';
import { deleteRedisPrefix } from '../helpers/gateway.js';
import { startReceiver, waitFor, type Receiver } from '../workers/receiver.js';
import { serve, type Served } from './support/processes.js';

const redisUrl = process.env.TEST_REDIS_URL;
const enabled = Boolean(redisUrl && process.env.TEST_DATABASE_URL);
const GRACE_MS = 1500;
const HEARTBEAT_MS = 300;

describe.runIf(enabled)('commands and presence: api + two gateways on Redis + workers as separate processes', () => {
  const prefix = `drivewire-commands-${randomUUID()}`;
  let db: Awaited<ReturnType<typeof createTestDb>>;
  let repos: Repositories;
  let api: Served;
  let gw1: Served;
  let gw2: Served;
  let workers: Served;
  let creds: Credentials;
  let auth: string;
  let receiver: Receiver;

  beforeAll(async () => {
    db = await createTestDb();
    repos = repositories(db.knex);
    receiver = await startReceiver();
    const url = new URL(redisUrl!);
    url.searchParams.set('prefix', prefix);
    const common = ['--database-url', db.url!, '--presence-grace-ms', String(GRACE_MS), '--gateway-heartbeat-ms', String(HEARTBEAT_MS)];
    api = await serve('api', [...common, '--allow-private-webhooks']);
    const gateway = [...common, '--mqtt-redis-url', url.toString()];
    [gw1, gw2, workers] = await Promise.all([serve('gateway', gateway), serve('gateway', gateway),
      serve('workers', [...common, '--allow-private-webhooks'], { DRIVEWIRE_WEBHOOK_BACKOFF_MS: '100' })]);
    creds = readCredentials(api.dataDir)!;
    auth = `Basic ${Buffer.from(`${creds.application!.id}:${creds.application!.secret}`).toString('base64')}`;
  }, 360_000);

  afterAll(async () => {
    await Promise.all([workers, gw1, gw2, api].filter(Boolean).map((p) => p.stop()));
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

  /** A device's client on `gw` that answers each command with the gateway it got it on. */
  const connect = async (gw: Served, d: { id: string; secret: string }, name: string): Promise<MqttClient> => {
    const client = await connectAsync(gw.mqtt!, { clientId: d.id, username: d.id, password: d.secret, reconnectPeriod: 0 });
    client.on('error', () => undefined);
    client.on('message', (_topic, payload) => {
      const m = JSON.parse(payload.toString()) as { commandId: string };
      void client.publishAsync(`devices/${d.id}/responses`, JSON.stringify({ commandId: m.commandId, ok: true, result: { gateway: name } }), { qos: 1 }).catch(() => undefined);
    });
    await client.subscribeAsync(`devices/${d.id}/commands`, { qos: 1 });
    return client;
  };
  const command = async (deviceId: string) => {
    const { body } = await call('POST', `/api/v1/devices/${deviceId}/commands`, { command: { type: 'ping', expiresIn: 30 } });
    return waitFor(async () => {
      const c = (await call('GET', `/api/v1/commands/${body.command.id}`)).body.command;
      return c.state === 'succeeded' ? c : undefined;
    }, 'the command succeeded', 15_000);
  };
  const presenceEvents = async (deviceId: string) => ((await call('GET', `/api/v1/devices/${deviceId}/events?type=device-*`)).body.events as
    { eventType: string }[]).map((e) => e.eventType).reverse();
  const status = async (deviceId: string) => (await call('GET', `/api/v1/devices/${deviceId}`)).body.device.status;

  it('reaches the device on gateway 2, then on gateway 1 after it moved there, online throughout; a SIGKILL of gateway 1 makes it offline once and online once on gateway 2', async () => {
    const owner = await repos.devices.createOwner({ name: 'commands' });
    const { device, secret } = await repos.devices.provision({ name: 'commands', ownerId: owner.id });
    await repos.devices.authorize(device.id, creds.application!.id);
    await repos.devices.register(creds.application!.id, device.id);
    const d = { id: device.id, secret };
    const sub = await call('POST', `/api/v1/devices/${d.id}/subscriptions`, { subscription: { eventType: 'device-offline', url: `${receiver.base}/ok/offline` } });
    expect(sub.status).toBe(201);

    const on2 = await connect(gw2, d, 'gw2');
    expect((await command(d.id)).response.result).toEqual({ gateway: 'gw2' });

    // moves to gateway 1 within the grace period: the next command reaches it there, and it never went offline
    await on2.endAsync();
    const on1 = await connect(gw1, d, 'gw1');
    expect((await command(d.id)).response.result).toEqual({ gateway: 'gw1' });
    await new Promise((r) => setTimeout(r, GRACE_MS + 4 * HEARTBEAT_MS));
    expect((await status(d.id)).online).toBe(true);
    expect(await presenceEvents(d.id)).toEqual(['device-online']);

    // gateway 1 dies without closing anything: its heartbeat stops, the others' presence passes take it for lost
    const killedAt = Date.now();
    gw1.proc.kill('SIGKILL');
    await new Promise<void>((r) => { if (!on1.connected) r(); else on1.once('close', () => r()); });
    await waitFor(async () => ((await presenceEvents(d.id)).length === 2 ? true : undefined), 'device-offline', 3 * HEARTBEAT_MS + GRACE_MS + 10_000);
    expect(Date.now() - killedAt).toBeLessThan(GRACE_MS + 3 * HEARTBEAT_MS + 5000);
    expect((await status(d.id)).online).toBe(false);
    await connect(gw2, d, 'gw2');
    await waitFor(async () => ((await presenceEvents(d.id)).length === 3 ? true : undefined), 'device-online again');
    await new Promise((r) => setTimeout(r, GRACE_MS + 4 * HEARTBEAT_MS));
    expect(await presenceEvents(d.id)).toEqual(['device-online', 'device-offline', 'device-online']);
    expect((await command(d.id)).response.result).toEqual({ gateway: 'gw2' });
    const hooks = await waitFor(() => {
      const got = receiver.received.filter((r) => r.path === '/ok/offline');
      return got.length ? got : undefined;
    }, 'the device-offline webhook');
    expect(hooks!).toHaveLength(1);
    expect(JSON.parse(hooks![0].body).notification.event).toMatchObject({ eventType: 'device-offline', deviceId: d.id, object: { type: 'device', id: d.id } });
  });
});
