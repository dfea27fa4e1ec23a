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
import { waitFor } from '../workers/receiver.js';

/**
 * On PostgreSQL an API that runs a gateway in its own process (`--only api,gateway`) still streams what
 * another gateway process stores (issue 14): the stream follows the database feed, each message once.
 * Two platforms on one database need PostgreSQL.
 */
describe.runIf(process.env.TEST_DATABASE_URL)('live stream with a gateway in the API process and another elsewhere', () => {
  let db: Awaited<ReturnType<typeof createTestDb>>;
  let both: Platform;
  let other: Platform;
  let dataDir: string;

  beforeAll(async () => {
    db = await createTestDb();
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-stream-gw-'));
    const config = (only: string) => loadConfig({ only, httpPort: 0, mqttPort: 0, host: '127.0.0.1', mqttHost: '127.0.0.1', dataDir, logLevel: 'silent' }, {});
    both = await startPlatform(config('api,gateway'), silentLogger, { db });
    other = await startPlatform(config('gateway'), silentLogger, { db });
  });
  afterAll(async () => {
    await other?.close(); await both?.close(); await db?.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('streams messages of both gateways once', async () => {
    const app = both.credentials.application;
    const owner = await both.repos.devices.createOwner({ name: 'two' });
    const { device, secret } = await both.repos.devices.provision({ name: 'two', ownerId: owner.id });
    await both.repos.devices.authorize(device.id, app.id);
    await both.repos.devices.register(app.id, device.id);
    const ws = new WebSocket(`${both.apiUrl.replace('http', 'ws')}/api/v1/messages`, {
      headers: { authorization: `Basic ${Buffer.from(`${app.id}:${app.secret}`).toString('base64')}` },
    });
    const pubs: string[] = [];
    let acked = false;
    ws.on('message', (m) => {
      const f = JSON.parse(String(m));
      if (f.type === 'pub') pubs.push(f.payload.timestamp);
      if (f.type === 'sub' && f.payload?.ack) acked = true;
    });
    await new Promise((r) => ws.once('open', r));
    ws.send(JSON.stringify({ type: 'sub', subject: { type: 'device', id: device.id } }));
    await waitFor(() => acked, 'the subscription');
    const ts = Date.now() - 10_000;
    for (const [i, p] of [both, other].entries()) {
      const url = p.parts.find((x) => x.urls?.mqtt)!.urls!.mqtt;
      const client = await connectAsync(url, { username: device.id, clientId: device.id, password: secret, reconnectPeriod: 0 });
      await client.publishAsync(`devices/${device.id}/frames`, JSON.stringify({ id: `f${i}`, ts: ts + i, pids: { '0D': '3C' } }), { qos: 1 });
      await client.endAsync();
    }
    await waitFor(() => pubs.length >= 2, 'both messages');
    await new Promise((r) => setTimeout(r, 1000));
    expect(pubs).toEqual([new Date(ts).toISOString(), new Date(ts + 1).toISOString()]);
    ws.close();
  });
});
