// The workers' expiry pass in a running platform: at start it drops what is older than --retention-days, and /metrics
// reports what each time-partitioned table keeps.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lib/config.js';
import { silentLogger } from '../../lib/logger.js';
import { startPlatform, type Platform } from '../../bin/platform.js';
import { createTestDb } from '../helpers/db.js';
import { repositories } from '../../db/index.js';
import { insertMessages } from '../helpers/telemetry.factory.js';
import { listPartitions } from '../../db/partitions.js';
import { MESSAGE_PARTITIONS } from '../../db/retention/time-tables.js';

const DAY = 86_400_000;
let p: Platform | null = null;
let close: (() => Promise<void>) | null = null;
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-e2e-retention-'));
afterAll(async () => { await p?.close(); await close?.(); fs.rmSync(dataDir, { recursive: true, force: true }); });

describe('retention in a running platform', () => {
  it('drops the expired days at start, keeps the others, and reports each table on /metrics', { timeout: 60_000 }, async () => {
    const db = await createTestDb();
    close = () => db.close();
    const repos = repositories(db.knex);
    const owner = await repos.devices.createOwner({ name: 'o' });
    const { device } = await repos.devices.provision({ name: 'd', ownerId: owner.id });
    const old = new Date(Date.now() - 40 * DAY);
    const oldDay = `messages_p${old.toISOString().slice(0, 10).replaceAll('-', '')}`;
    await insertMessages(db.knex, [{ deviceId: device.id, ts: old }, { deviceId: device.id, ts: new Date(Date.now() - 20 * DAY) }]);

    p = await startPlatform(loadConfig({ httpPort: 0, mqttPort: 0, host: '127.0.0.1', mqttHost: '127.0.0.1', dataDir, logLevel: 'silent',
      retentionDays: 30 }, {}), silentLogger, { db });
    const deadline = Date.now() + 20_000;
    while ((await listPartitions(db.knex, MESSAGE_PARTITIONS)).some((x) => x.name === oldDay) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
    }
    expect((await listPartitions(db.knex, MESSAGE_PARTITIONS)).map((x) => x.name)).not.toContain(oldDay);
    expect(Number((await db.knex('messages').where({ device_id: device.id }).count({ n: '*' }))[0].n)).toBe(1);

    const metrics = await (await fetch(`${p.apiUrl}/metrics`)).text();
    expect(metrics).toMatch(/^drivewire_table_bytes\{table="messages"\} \d+$/m);
    const since = Number(/^drivewire_table_retained_since_seconds\{table="messages"\} (\d+)$/m.exec(metrics)?.[1]);
    expect(since * 1000).toBe(Date.parse(new Date(Date.now() - 20 * DAY).toISOString().slice(0, 10)));
    expect(metrics).toMatch(/^drivewire_retention_dropped_partitions_total 1$/m);
  });
});
