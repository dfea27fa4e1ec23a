// Platform parts (`--only …`) started in this process on one test database, as separate processes would run them
// (test/e2e/split-processes.test.ts, test/e2e/stream-gateways.test.ts).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import WebSocket from 'ws';
import { loadConfig } from '../../../lib/config.js';
import { silentLogger } from '../../../lib/logger.js';
import { startPlatform, type Platform } from '../../../bin/platform.js';
import { createTestDb } from '../../helpers/db.js';

export interface Parts {
  db: Awaited<ReturnType<typeof createTestDb>>;
  /** One platform per `--only` value, in the order given. */
  platforms: Platform[];
  /** Closes the platforms in reverse order, then the database, and removes the data dir. */
  close(): Promise<void>;
}

/** Starts one platform per `--only` value (e.g. `gateway`, `api,gateway`) on a fresh test database, ports 0, silent. */
export async function startParts(only: string[]): Promise<Parts> {
  const db = await createTestDb();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-parts-'));
  const platforms: Platform[] = [];
  const close = async () => {
    for (const p of [...platforms].reverse()) await p.close();
    await db.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    for (const parts of only) {
      const config = loadConfig({
        only: parts, httpPort: 0, mqttPort: 0, host: '127.0.0.1', mqttHost: '127.0.0.1', dataDir, logLevel: 'silent',
      }, {});
      platforms.push(await startPlatform(config, silentLogger, { db }));
    }
  } catch (err) {
    await close();
    throw err;
  }
  return { db, platforms, close };
}

/** A new device the platform's default application can read (authorized and registered), with its MQTT secret. */
export async function readableDevice(p: Platform, name: string) {
  const app = p.credentials.application;
  const owner = await p.repos.devices.createOwner({ name });
  const { device, secret } = await p.repos.devices.provision({ name, ownerId: owner.id });
  await p.repos.devices.authorize(device.id, app.id);
  await p.repos.devices.register(app.id, device.id);
  return { device, secret };
}

/** A live message stream client of the platform's API, as its default application. */
export function streamSocket(p: Platform): WebSocket {
  const app = p.credentials.application;
  return new WebSocket(`${p.apiUrl.replace('http', 'ws')}/api/v1/messages`, {
    headers: { authorization: `Basic ${Buffer.from(`${app.id}:${app.secret}`).toString('base64')}` },
  });
}
