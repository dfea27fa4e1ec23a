import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../lib/config.js';
import { silentLogger } from '../../lib/logger.js';
import { startPlatform, type Platform } from '../../bin/platform.js';
import { createTestDb } from './db.js';
import { startReceiver, type Receiver } from '../workers/receiver.js';

export interface E2ePlatform {
  /** The whole platform (API, gateway, workers) as `drivewire serve` starts it, on a cloned test database. */
  p: Platform;
  mqttUrl: string;
  /** The platform's data dir (credentials.json, for the real CLI). */
  dataDir: string;
  /** Basic credentials of the default application. */
  auth: string;
  /** A real HTTP receiver for webhooks, when asked for. */
  receiver: Receiver | null;
  /** Calls the API as the default application; a 204 has a null body. */
  api(method: string, url: string, body?: unknown, headers?: Record<string, string>): Promise<{ status: number; body: any }>;
  /** A provisioned device, authorized for and registered with the default application. */
  newDevice(name: string): Promise<{ device: { id: string; name: string }; secret: string }>;
  close(): Promise<void>;
}

/**
 * The end-to-end setup the e2e suites share: a real platform on a cloned database and a temporary data dir,
 * optionally with a webhook receiver (private webhook addresses allowed, short timeouts and backoff).
 */
export async function startE2ePlatform(o: { receiver?: boolean; config?: Record<string, unknown> } = {}): Promise<E2ePlatform> {
  const db = await createTestDb();
  const receiver = o.receiver ? await startReceiver() : null;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-e2e-'));
  const webhooks = receiver ? { allowPrivateWebhooks: true, webhookTimeoutMs: 1500, webhookBackoffMs: 50 } : {};
  const p = await startPlatform(loadConfig({
    httpPort: 0, mqttPort: 0, host: '127.0.0.1', mqttHost: '127.0.0.1', dataDir, logLevel: 'silent', ...webhooks, ...o.config,
  }, {}), silentLogger, { db });
  const app = p.credentials.application;
  const auth = `Basic ${Buffer.from(`${app.id}:${app.secret}`).toString('base64')}`;
  return {
    p, auth, receiver, dataDir,
    mqttUrl: p.parts.find((x) => x.urls?.mqtt)!.urls!.mqtt,
    async api(method, url, body, headers = {}) {
      const res = await fetch(url.startsWith('http') ? url : `${p.apiUrl}${url}`, {
        method, headers: { authorization: auth, ...headers, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      return { status: res.status, body: res.status === 204 ? null : await res.json() };
    },
    async newDevice(name) {
      const owner = await p.repos.devices.createOwner({ name });
      const { device, secret } = await p.repos.devices.provision({ name, ownerId: owner.id });
      await p.repos.devices.authorize(device.id, app.id);
      await p.repos.devices.register(app.id, device.id);
      return { device, secret };
    },
    async close() {
      await p.close();
      await receiver?.close();
      await db.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
