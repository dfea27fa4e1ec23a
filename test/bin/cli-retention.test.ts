// The real `drivewire retention apply` binary on a database with old telemetry: what it prints, drops and keeps. On
// the test PostgreSQL when there is one (a clone, given by --database-url), else on an embedded database in a data dir
// of its own (the binary opens it as serve would).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { migrateLatest, openConfiguredDatabase, repositories } from '../../db/index.js';
import { insertMessages } from '../helpers/telemetry.factory.js';
import { createTestDb } from '../helpers/db.js';

let dir: string;
let deviceId: string;
let databaseUrl: string | null = null;
let closeClone: (() => Promise<void>) | null = null;
const open = () => openConfiguredDatabase({ databaseUrl, dataDir: dir });
const where = () => (databaseUrl ? ['--database-url', databaseUrl] : ['--data-dir', dir]);
const DAY = 86_400_000;
const old = new Date(Date.now() - 40 * DAY);
const oldDay = `messages_p${old.toISOString().slice(0, 10).replaceAll('-', '')}`;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-cli-retention-'));
  if (process.env.TEST_DATABASE_URL) {
    const clone = await createTestDb();
    databaseUrl = clone.url;
    closeClone = () => clone.close();
  }
  const db = await open();
  try {
    await migrateLatest(db.knex);
    const repos = repositories(db.knex);
    const owner = await repos.devices.createOwner({ name: 'o' });
    deviceId = (await repos.devices.provision({ name: 'd', ownerId: owner.id })).device.id;
    await insertMessages(db.knex, [{ deviceId, ts: old }, { deviceId, ts: new Date(Date.now() - 60_000) }]);
  } finally {
    await db.close();
  }
}, 120_000);
afterAll(async () => { await closeClone?.(); fs.rmSync(dir, { recursive: true, force: true }); });

describe('drivewire retention apply', () => {
  it('prints what a dry run would drop, then drops the days older than --retention-days and keeps today', { timeout: 120_000 }, async () => {
    const dry = await runCli(['retention', 'apply', ...where(), '--retention-days', '30', '--dry-run'], {}, 110_000);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toMatch(new RegExp(`^would drop ${oldDay} \\(messages from \\S+ to \\S+: 1 rows, [\\d.]+ MB\\)$`, 'm'));

    const applied = await runCli(['retention', 'apply', ...where(), '--retention-days', '30', '--json'], {}, 110_000);
    expect(applied.code, applied.stderr).toBe(0);
    const report = JSON.parse(applied.stdout);
    expect(report.retentionDays).toEqual({ telemetry: 30, transactions: null, notifications: null, deadLetters: null });
    expect(report.dropped.map((d: { name: string }) => d.name)).toEqual([oldDay]);
    const messages = report.storage.find((s: { table: string }) => s.table === 'messages');
    expect(new Date(messages.retainedSince).getTime()).toBeGreaterThan(Date.now() - 2 * DAY);

    const db = await open();
    try {
      expect((await db.knex('messages').where({ device_id: deviceId }).pluck('ts')).map((ts: Date) => new Date(ts).getTime() > old.getTime()))
        .toEqual([true]);
    } finally {
      await db.close();
    }
  });

  it('refuses a retention under a day with the setting named', async () => {
    const res = await runCli(['retention', 'apply', ...where(), '--retention-days', '0']);
    expect(res.code).not.toBe(0);
    expect(res.stderr).toMatch(/--retention-days/);
  });
});
