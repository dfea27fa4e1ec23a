import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lib/config.js';
import { silentLogger } from '../../lib/logger.js';
import { startPlatform } from '../../bin/platform.js';
import { createTestDb } from '../helpers/db.js';

let db: Awaited<ReturnType<typeof createTestDb>>;
let dataDir: string;
beforeAll(async () => { db = await createTestDb(); dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-platform-')); });
afterAll(async () => { await db?.close(); fs.rmSync(dataDir, { recursive: true, force: true }); });

const config = (extra: Record<string, unknown> = {}) =>
  loadConfig({ httpPort: 0, mqttPort: 0, host: '127.0.0.1', mqttHost: '127.0.0.1', dataDir, logLevel: 'silent', ...extra }, {});

describe('startPlatform', () => {
  it('creates a default Enterprise application on first start, writes credentials.json (0600) and serves the API', async () => {
    const p = await startPlatform(config(), silentLogger, { db });
    try {
      const file = path.join(dataDir, 'credentials.json');
      expect(fs.statSync(file).mode & 0o777).toBe(0o600);
      const creds = JSON.parse(fs.readFileSync(file, 'utf8'));
      expect(creds.apiUrl).toBe(p.apiUrl);
      expect(creds.application.kind).toBe('enterprise');
      const res = await fetch(`${p.apiUrl}/api/v1/devices`, {
        headers: { authorization: `Basic ${Buffer.from(`${creds.application.id}:${creds.application.secret}`).toString('base64')}` },
      });
      expect(res.status).toBe(200);
      expect((await res.json()).devices).toEqual([]);
    } finally {
      await p.close();
    }
  });

  it('reuses the same application and secret on a second start', async () => {
    const before = JSON.parse(fs.readFileSync(path.join(dataDir, 'credentials.json'), 'utf8'));
    const p = await startPlatform(config(), silentLogger, { db });
    await p.close();
    const after = JSON.parse(fs.readFileSync(path.join(dataDir, 'credentials.json'), 'utf8'));
    expect(after.application).toEqual(before.application);
    expect(after.adminToken).toBe(before.adminToken);
  });

  it('issues a new secret for the same application when credentials.json was lost', async () => {
    const before = JSON.parse(fs.readFileSync(path.join(dataDir, 'credentials.json'), 'utf8'));
    fs.rmSync(path.join(dataDir, 'credentials.json'));
    const p = await startPlatform(config(), silentLogger, { db });
    await p.close();
    const after = JSON.parse(fs.readFileSync(path.join(dataDir, 'credentials.json'), 'utf8'));
    expect(after.application.id).toBe(before.application.id);
    expect(after.application.secret).not.toBe(before.application.secret);
    expect(await p.repos.applications.authenticate(before.application.id, before.application.secret)).toBeNull();
  });

  it('stops with a message naming the port and the flag when the HTTP port is taken', async () => {
    const blocker = net.createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', () => r()));
    const port = (blocker.address() as net.AddressInfo).port;
    try {
      await expect(startPlatform(config({ httpPort: port }), silentLogger, { db }))
        .rejects.toThrow(`Port ${port} (HTTP API) is already in use; choose another with --http-port`);
    } finally {
      blocker.close();
    }
  });
});
