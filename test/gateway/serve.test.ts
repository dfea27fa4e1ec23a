import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectAsync } from 'mqtt';
import { loadConfig } from '../../lib/config.js';
import { silentLogger } from '../../lib/logger.js';
import { startPlatform, type Platform } from '../../bin/platform.js';
import { createTestDb } from '../helpers/db.js';
import { storedMessages } from '../helpers/telemetry.factory.js';

let db: Awaited<ReturnType<typeof createTestDb>>;
let platform: Platform;
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-serve-'));

beforeAll(async () => {
  db = await createTestDb();
  const config = loadConfig({ only: 'gateway', dataDir, httpPort: 0, host: '127.0.0.1', mqttPort: 0, mqttHost: '127.0.0.1', logLevel: 'silent' }, {});
  platform = await startPlatform(config, silentLogger, { db });
});
afterAll(async () => {
  await platform?.close();
  await db?.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

describe('drivewire serve --only gateway', () => {
  it('runs the gateway with /health and /metrics, without the application API', async () => {
    expect(platform.parts.map((p) => p.name)).toEqual(['gateway']);
    const health = await fetch(`${platform.apiUrl}/health`);
    expect(await health.json()).toEqual({ status: 'ok', checks: { database: true, broker: true } });
    expect(await (await fetch(`${platform.apiUrl}/metrics`)).text()).toMatch(/^# HELP drivewire_gateway_connected_devices/m);
    expect((await fetch(`${platform.apiUrl}/api/v1/devices`)).status).toBe(404);
  });

  it('writes the MQTT URL into credentials.json and takes frames there', async () => {
    const creds = JSON.parse(fs.readFileSync(path.join(dataDir, 'credentials.json'), 'utf8'));
    expect(creds.mqttUrl).toMatch(/^mqtt:\/\/127\.0\.0\.1:\d+$/);
    const owner = await platform.repos.devices.createOwner({ name: 'o' });
    const { device, secret } = await platform.repos.devices.provision({ name: 'd', ownerId: owner.id });
    const client = await connectAsync(creds.mqttUrl, { username: device.id, clientId: device.id, password: secret, reconnectPeriod: 0 });
    await client.publishAsync(`devices/${device.id}/frames`, JSON.stringify({ ts: Date.now() - 1000, pids: { '0D': '50' } }), { qos: 1 });
    await client.endAsync();
    const [row] = await storedMessages(platform.db.knex).where('device_id', device.id);
    expect(row.data).toEqual({ vehicleSpeed: 80 });
  });
});
