import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { connectAsync } from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lib/config.js';
import { silentLogger } from '../../lib/logger.js';
import { startPlatform, type Platform } from '../../bin/platform.js';
import { createTestDb } from '../helpers/db.js';
import { startReceiver, type Receiver } from '../workers/receiver.js';

/**
 * Stopping `drivewire serve` while a batch is still queued: the gateway commits it as it stops, and its events'
 * notifications (handed to the worker of the process, lib/bus.ts) are delivered before the platform has stopped —
 * not left leased in the queue until their lease expires.
 */
let db: Awaited<ReturnType<typeof createTestDb>>;
let receiver: Receiver;
let dataDir: string;
beforeAll(async () => {
  db = await createTestDb();
  receiver = await startReceiver();
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-e2e-shutdown-'));
});
afterAll(async () => {
  await receiver?.close(); await db?.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

describe('stopping the platform with a batch queued', () => {
  it('delivers the notifications of the batch the gateway commits while it stops', async () => {
    // a long batch window: the frame is still queued when the platform is asked to stop
    const p: Platform = await startPlatform(loadConfig({
      httpPort: 0, mqttPort: 0, host: '127.0.0.1', mqttHost: '127.0.0.1', dataDir, logLevel: 'silent',
      allowPrivateWebhooks: true, ingestBatchMs: 5_000,
    }, {}), silentLogger, { db });
    let closed = false;
    try {
      const app = p.credentials.application;
      const owner = await p.repos.devices.createOwner({ name: 'QA' });
      const { device, secret } = await p.repos.devices.provision({ name: 'shutdown', ownerId: owner.id });
      await p.repos.devices.authorize(device.id, app.id);
      await p.repos.devices.register(app.id, device.id);
      const auth = `Basic ${Buffer.from(`${app.id}:${app.secret}`).toString('base64')}`;
      const res = await fetch(`${p.apiUrl}/api/v1/devices/${device.id}/subscriptions`, {
        method: 'POST', headers: { authorization: auth, 'content-type': 'application/json' },
        body: JSON.stringify({ subscription: { eventType: 'startup', url: `${receiver.base}/ok/shutdown` } }),
      });
      expect(res.status).toBe(201);

      const mqttUrl = p.parts.find((x) => x.urls?.mqtt)!.urls!.mqtt.replace('localhost', '127.0.0.1');
      const client = await connectAsync(mqttUrl, { username: device.id, password: secret, clientId: device.id, reconnectPeriod: 0 });
      const frame = { ts: new Date(Date.now() - 1000).toISOString(), kind: 'startup', location: { lat: 32.7767, lon: -96.797 } };
      // QoS 1: its acknowledgement would follow the commit, but the stopping broker has closed the connection by then
      client.publishAsync(`devices/${device.id}/frames`, JSON.stringify(frame), { qos: 1 }).catch(() => undefined);
      await new Promise((r) => setTimeout(r, 300)); // received and queued, not committed (batch window 5 s)
      expect(Number((await db.knex('messages').where({ device_id: device.id }).count({ n: '*' }))[0].n)).toBe(0);
      await p.close();
      closed = true;
      client.end(true);
    } finally {
      if (!closed) await p.close();
    }
    const rows = await db.knex('notifications as n').join('events as e', 'e.id', 'n.event_id').where('e.event_type', 'startup')
      .select('n.state', 'n.attempts', 'n.locked_until');
    expect(rows).toEqual([{ state: 'complete', attempts: 1, locked_until: null }]);
    expect(receiver.on('/ok/shutdown')).toHaveLength(1);
  });
});
