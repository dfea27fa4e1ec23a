import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lib/config.js';
import { silentLogger } from '../../lib/logger.js';
import { startPlatform } from '../../bin/platform.js';
import { databaseIdentity, readCredentials, rotateCredentials } from '../../bin/credentials.js';
import { banner } from '../../bin/commands/serve.js';
import { createClient } from '../../bin/client.js';
import { repositories } from '../../db/index.js';
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

  it('never rotates at start when credentials.json was lost; drivewire credentials rotate issues new ones', async () => {
    const before = JSON.parse(fs.readFileSync(path.join(dataDir, 'credentials.json'), 'utf8'));
    fs.rmSync(path.join(dataDir, 'credentials.json'));
    const p = await startPlatform(config(), silentLogger, { db });
    await p.close();
    expect(p.credentialsCreated).toBe(false);
    expect(p.credentialsFile.application).toBeNull();
    expect(() => p.credentials.application).toThrow(/drivewire credentials rotate/);
    expect(await p.repos.applications.authenticate(before.application.id, before.application.secret)).not.toBeNull();
    expect(await p.repos.applications.isAdminToken(before.adminToken)).toBe(true);
    const after = JSON.parse(fs.readFileSync(path.join(dataDir, 'credentials.json'), 'utf8'));
    expect(after).toMatchObject({ apiUrl: p.apiUrl, application: null, adminToken: null });

    const rotated = await rotateCredentials(db.knex, p.repos, dataDir);
    expect(rotated.application!.id).toBe(before.application.id);
    expect(await p.repos.applications.authenticate(before.application.id, before.application.secret)).toBeNull();
    expect(await p.repos.applications.isAdminToken(before.adminToken)).toBe(false);
    expect(await p.repos.applications.authenticate(rotated.application!.id, rotated.application!.secret)).not.toBeNull();
    expect(JSON.parse(fs.readFileSync(path.join(dataDir, 'credentials.json'), 'utf8'))).toEqual(rotated);
  });

  it('refuses a data dir whose credentials.json belongs to another database, and leaves the file as it was', async () => {
    const file = path.join(dataDir, 'credentials.json');
    const own = JSON.parse(fs.readFileSync(file, 'utf8'));
    expect(own.database).toBe(await databaseIdentity(db.knex));
    expect(own.application.webhookSecret).toEqual(expect.any(String)); // rotation keeps it in the file
    const foreign = JSON.stringify({ ...own, database: '7000000000000000000/elsewhere' }, null, 2);
    fs.writeFileSync(file, foreign);
    try {
      await expect(startPlatform(config(), silentLogger, { db })).rejects.toThrow(/credentials of another database.*--data-dir/);
      await expect(rotateCredentials(db.knex, repositories(db.knex), dataDir)).rejects.toThrow(/another database/);
      expect(fs.readFileSync(file, 'utf8')).toBe(foreign);
    } finally {
      fs.writeFileSync(file, JSON.stringify(own, null, 2));
    }
  });

  it('a part on its own empty data dir neither creates nor rotates, and writes only the URL it serves', async () => {
    const identity = await databaseIdentity(db.knex);
    const before = JSON.parse(fs.readFileSync(path.join(dataDir, 'credentials.json'), 'utf8'));
    const dirs = ['gateway', 'workers', 'api,workers'].map((only) => [only, fs.mkdtempSync(path.join(os.tmpdir(), 'dw-part-'))] as const);
    try {
      for (const [only, dir] of dirs) {
        const p = await startPlatform(config({ only, dataDir: dir }), silentLogger, { db });
        await p.close();
        const file = readCredentials(dir);
        if (only === 'gateway') expect(file).toEqual({ database: identity, apiUrl: null, mqttUrl: expect.stringMatching(/^mqtt:\/\/127\.0\.0\.1:\d+$/), adminToken: null, application: null });
        if (only === 'workers') expect(file).toBeNull();
        if (only === 'api,workers') {
          expect(p.parts.map((x) => x.name)).toEqual(['notifications', 'run-scheduler', 'trip-sweep', 'retention', 'command-expiry', 'presence-pass']);
          expect(file).toEqual({ database: identity, apiUrl: p.apiUrl, mqttUrl: null, adminToken: null, application: null });
        }
      }
      expect(() => config({ only: 'api,bogus' })).toThrow('"bogus" must be one of all, api, gateway, workers');
      // The first part's secret and admin token still work.
      expect(await db.knex('applications').where({ is_default: true }).count('* as n').first()).toEqual({ n: 1 });
      const repos = repositories(db.knex);
      expect(await repos.applications.authenticate(before.application.id, before.application.secret)).not.toBeNull();
    } finally {
      for (const [, dir] of dirs) fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('merges URLs into credentials.json: a workers part keeps the API and MQTT URLs the others wrote', async () => {
    const file = path.join(dataDir, 'credentials.json');
    const before = readCredentials(dataDir)!;
    fs.writeFileSync(file, JSON.stringify({ ...before, mqttUrl: 'mqtt://gw.example:1883' }));
    const p = await startPlatform(config({ only: 'workers' }), silentLogger, { db });
    await p.close();
    expect(readCredentials(dataDir)).toEqual({ ...before, mqttUrl: 'mqtt://gw.example:1883' });
  });

  it('links of parts without the API use the URL the API part announced, never their own port', async () => {
    const apiPart = await startPlatform(config({ only: 'api', publicUrl: 'https://api.example.com' }), silentLogger, { db });
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-part-'));
    try {
      const workers = await startPlatform(config({ only: 'workers', dataDir: dir }), silentLogger, { db });
      await workers.close();
      expect(workers.config.publicUrl).toBe('https://api.example.com');
      expect(workers.apiUrl).toMatch(/^http:\/\/localhost:\d+$/); // its own /health, not the API
      const explicit = await startPlatform(config({ only: 'gateway', dataDir: dir, publicUrl: 'https://other.example' }), silentLogger, { db });
      await explicit.close();
      expect(explicit.config.publicUrl).toBe('https://other.example');
    } finally {
      await apiPart.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('prints what each part serves: the API banner and "Try: curl" only where the API runs', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-part-'));
    try {
      for (const only of ['gateway', 'workers', 'api,workers']) {
        const p = await startPlatform(config({ only, dataDir: only === 'api,workers' ? dataDir : dir }), silentLogger, { db });
        await p.close();
        const text = banner(p).join('\n');
        expect(text).toContain(`drivewire is running: ${only.replace(',', ', ')}`);
        if (only === 'api,workers') {
          expect(text).toMatch(/ {2}API +http:\/\/localhost:\d+\/api\/v1/);
          expect(text).toContain('workers    webhook notifications, simulator runs');
        } else {
          expect(text).not.toMatch(/Try: curl| {2}API |secret/);
          expect(text).toMatch(/ {2}health +http:\/\/localhost:\d+\/health/);
        }
        if (only === 'gateway') expect(text).toMatch(/ {2}mqtt +mqtt:\/\/127\.0\.0\.1:\d+/);
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the CLI on another host takes the admin token from DRIVEWIRE_ADMIN_TOKEN_FILE', async () => {
    const token = readCredentials(dataDir)!.adminToken!;
    const p = await startPlatform(config({ only: 'api' }), silentLogger, { db });
    const elsewhere = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-host2-'));
    const file = path.join(elsewhere, 'admin-token');
    fs.writeFileSync(file, `${token}\n`);
    process.env.DRIVEWIRE_ADMIN_TOKEN_FILE = file;
    try {
      const client = createClient({ apiUrl: p.apiUrl, dataDir: elsewhere });
      const { applications } = await client.admin<{ applications: { id: string }[] }>('GET', '/admin/v1/applications');
      expect(applications.map((a) => a.id)).toContain(readCredentials(dataDir)!.application!.id);
      fs.writeFileSync(file, 'not-the-token');
      await expect(createClient({ apiUrl: p.apiUrl, dataDir: elsewhere }).admin('GET', '/admin/v1/applications')).rejects.toThrow(/401/);
    } finally {
      delete process.env.DRIVEWIRE_ADMIN_TOKEN_FILE;
      await p.close();
      fs.rmSync(elsewhere, { recursive: true, force: true });
    }
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

  it('checks its ports before it opens the database: a taken MQTT port leaves a new data dir without a database', async () => {
    const blocker = net.createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', () => r()));
    const port = (blocker.address() as net.AddressInfo).port;
    const fresh = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-ports-'));
    try {
      // no `db`: the platform would open (and first create) the embedded database in the data dir
      await expect(startPlatform(config({ mqttPort: port, dataDir: fresh, databaseUrl: null }), silentLogger))
        .rejects.toThrow(`Port ${port} (MQTT) is already in use; choose another with --mqtt-port`);
      expect(fs.readdirSync(fresh)).toEqual([]);
    } finally {
      blocker.close();
      fs.rmSync(fresh, { recursive: true, force: true });
    }
  });
});
