import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lib/config.js';
import { silentLogger } from '../../lib/logger.js';
import { startPlatform, type Platform } from '../../bin/platform.js';
import { createTestDb } from '../helpers/db.js';
import { runCli } from '../helpers/cli.js';

let db: Awaited<ReturnType<typeof createTestDb>>;
let dataDir: string;
let platform: Platform;
beforeAll(async () => {
  db = await createTestDb();
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-cli-'));
  platform = await startPlatform(loadConfig({ httpPort: 0, mqttPort: 0, host: '127.0.0.1', mqttHost: '127.0.0.1', dataDir, logLevel: 'silent' }, {}), silentLogger, { db });
});
afterAll(async () => { await platform?.close(); await db?.close(); fs.rmSync(dataDir, { recursive: true, force: true }); });

describe('drivewire CLI (the real binary)', () => {
  it('creates applications and provisions, authorizes and registers devices through the admin API', async () => {
    const app = await runCli(['apps', 'create', '--name', 'Fleet QA', '--kind', 'consumer', '--data-dir', dataDir, '--json']);
    expect(app.code).toBe(0);
    const created = JSON.parse(app.stdout);
    expect(created).toMatchObject({ name: 'Fleet QA', kind: 'consumer', secret: expect.any(String) });

    const dev = await runCli(['devices', 'provision', '--name', 'Van 1', '--authorize', 'default', '--data-dir', dataDir, '--json']);
    expect(dev.code).toBe(0);
    const device = JSON.parse(dev.stdout);
    expect(device).toMatchObject({ name: 'Van 1', secret: expect.any(String) });

    const auth = await runCli(['devices', 'authorize', device.id, '--app', created.id, '--data-dir', dataDir]);
    expect(auth.code).toBe(0);
    expect(auth.stdout).toContain(`Authorized application ${created.id} for device ${device.id}`);

    const creds = platform.credentials.application;
    const res = await fetch(`${platform.apiUrl}/api/v1/devices`, { headers: { authorization: `Basic ${Buffer.from(`${creds.id}:${creds.secret}`).toString('base64')}` } });
    expect((await res.json()).devices.map((d: any) => d.id)).toEqual([device.id]);
    const consumer = await fetch(`${platform.apiUrl}/api/v1/devices`, { headers: { authorization: `Basic ${Buffer.from(`${created.id}:${created.secret}`).toString('base64')}` } });
    expect((await consumer.json()).devices.map((d: any) => d.id)).toEqual([device.id]);

    const list = await runCli(['devices', 'list', '--data-dir', dataDir]);
    expect(list.stdout).toContain('Van 1');
  }, 90_000); // a dozen real CLI processes, each starting Node and tsx

  it('prints one line and exits non-zero when the server is unreachable or the input is bad', async () => {
    const down = await runCli(['apps', 'list', '--api-url', 'http://127.0.0.1:1', '--data-dir', dataDir]);
    expect(down.code).not.toBe(0);
    expect(down.stderr.trim().split('\n')).toHaveLength(1);
    expect(down.stderr).toMatch(/^drivewire: Cannot reach the drivewire API at http:\/\/127\.0\.0\.1:1/);

    const kind = await runCli(['apps', 'create', '--name', 'x', '--kind', 'admin', '--data-dir', dataDir]);
    expect(kind.code).toBe(1);
    expect(kind.stderr).toBe('drivewire: --kind must be enterprise or consumer, got "admin"\n');

    const nodir = await runCli(['apps', 'list', '--data-dir', path.join(dataDir, 'missing')]);
    expect(nodir.code).toBe(1);
    expect(nodir.stderr).toMatch(/^drivewire: No admin token: start the platform/);
  });

  it('names the database URL (not its password) and why, in one line, when PostgreSQL cannot be reached', async () => {
    // a port nothing listens on: a connection refused, whatever server this machine runs
    const server = net.createServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as net.AddressInfo).port;
    await new Promise((r) => server.close(r));
    for (const command of [['migrate'], ['serve', '--http-port', '0', '--mqtt-port', '0', '--data-dir', dataDir]]) {
      const run = await runCli([...command, '--database-url', `postgres://fleet:s3cret@127.0.0.1:${port}/drivewire`]);
      expect(run.code, command[0]).toBe(1);
      expect(run.stdout, command[0]).toBe(''); // knex's own message about the failed connection is not printed
      expect(run.stderr, command[0]).toBe(`drivewire: cannot connect to PostgreSQL at postgres://fleet:***@127.0.0.1:${port}/drivewire: `
        + `connect ECONNREFUSED 127.0.0.1:${port} (--database-url / DATABASE_URL)\n`);
    }
  });
});
