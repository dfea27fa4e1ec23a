import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { connectAsync } from 'mqtt';
import { loadConfig } from '../../lib/config.js';
import { silentLogger } from '../../lib/logger.js';
import { startPlatform, type Platform } from '../../bin/platform.js';
import { createTestDb } from '../helpers/db.js';

/**
 * `--only gateway` and `--only api` on one database (as two processes would run them): a frame
 * published to the gateway reaches a live-stream client of the API, which reads it from the database.
 */
let db: Awaited<ReturnType<typeof createTestDb>>;
let gateway: Platform;
let api: Platform;
let dataDir: string;

beforeAll(async () => {
  db = await createTestDb();
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-split-'));
  const config = (only: string) => loadConfig({ only, httpPort: 0, mqttPort: 0, host: '127.0.0.1', mqttHost: '127.0.0.1', dataDir, logLevel: 'silent' }, {});
  gateway = await startPlatform(config('gateway'), silentLogger, { db });
  api = await startPlatform(config('api'), silentLogger, { db });
});
afterAll(async () => {
  await api?.close(); await gateway?.close(); await db?.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

describe('gateway and API in separate parts', () => {
  it('streams a message published to the gateway to a client of the API', async () => {
    expect(gateway.parts.map((p) => p.name)).toEqual(['gateway']);
    const app = api.credentials.application;
    const owner = await api.repos.devices.createOwner({ name: 'split' });
    const { device, secret } = await api.repos.devices.provision({ name: 'split', ownerId: owner.id });
    await api.repos.devices.authorize(device.id, app.id);
    await api.repos.devices.register(app.id, device.id);

    const ws = new WebSocket(`${api.apiUrl.replace('http', 'ws')}/api/v1/messages`, {
      headers: { authorization: `Basic ${Buffer.from(`${app.id}:${app.secret}`).toString('base64')}` },
    });
    const frames: any[] = [];
    ws.on('message', (m) => frames.push(JSON.parse(String(m))));
    await new Promise((r) => ws.once('open', r));
    ws.send(JSON.stringify({ type: 'sub', subject: { type: 'device', id: device.id } }));
    const until = (ok: () => boolean) => new Promise<void>((resolve, reject) => {
      const deadline = Date.now() + 10_000;
      const check = () => (ok() ? resolve() : Date.now() > deadline ? reject(new Error('timed out')) : setTimeout(check, 20));
      check();
    });
    await until(() => frames.some((f) => f.type === 'sub' && f.payload?.ack === true));

    const client = await connectAsync(gateway.parts[0].urls!.mqtt.replace('localhost', '127.0.0.1'), { username: device.id, clientId: device.id, password: secret, reconnectPeriod: 0 });
    await client.publishAsync(`devices/${device.id}/frames`, JSON.stringify({ id: 'split-1', ts: Date.now(), pids: { '0D': '3C' } }), { qos: 1 });
    await client.endAsync();

    await until(() => frames.some((f) => f.type === 'pub'));
    const pub = frames.find((f) => f.type === 'pub');
    expect(pub.payload.data).toEqual({ vehicleSpeed: 60 });
    ws.close();
  });
});
