import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, basic, type TestApp } from '../helpers/app.js';
import { REMAINING_CAP } from '../../db/paging.js';
import { insertMessages, series } from '../helpers/telemetry.factory.js';
import { recordStatements } from '../helpers/statements.js';
import { partitionsFor } from '../helpers/partitions.js';

// An API read costs one round trip once warm for a device's messages (the page with its count), two for
// the other streams (the page and a capped count): authentication
// and the device scope are cached briefly, the transaction log is written in batches. These tests pin
// the cost and that the caches never outlive a revocation made through this process.
let t: TestApp;
beforeAll(async () => { t = await buildTestApp(); });
afterAll(async () => { await t?.close(); });

const statements = async (fn: () => Promise<unknown>) => (await recordStatements(t.db.knex, fn)).sql;

describe('per-request database cost', () => {
  it('a warm GET …/messages runs one statement: the page with its remaining count', async () => {
    const app = await t.make.application();
    const device = await t.make.device(app);
    await insertMessages(t.db.knex, series(device.id, new Date('2026-03-01T00:00:00Z'), 12));
    const url = `/api/v1/devices/${device.id}/messages?limit=5`;
    expect((await t.get(url, app.auth)).json().meta.pagination.remaining).toBe(7);
    await t.repos.transactions.flush(); // the first call's log line, so its timed write is not counted below
    const sql = await statements(async () => { expect((await t.get(url, app.auth)).json().meta.pagination.remaining).toBe(7); });
    expect(sql).toHaveLength(1);
    // The call is still in the log when the application reads it.
    const log = (await t.get('/api/v1/transactions?limit=3', app.auth)).json();
    expect(log.transactions.map((x: { path: string }) => x.path)).toContain(url);
  });

  it("a vehicle's trip and report-card lists check the caller's access once: its readable recent devices, then the page", async () => {
    const app = await t.make.application();
    const device = await t.make.device(app);
    const vehicle = await t.repos.vehicles.upsertByVin('1HGCM82633A004352', async () => ({}));
    await t.repos.vehicles.associate(device.id, vehicle.id, new Date('2026-03-01T00:00:00Z'));
    for (const list of ['trips', 'report_cards']) {
      const url = `/api/v1/vehicles/${vehicle.id}/${list}`;
      expect((await t.get(url, app.auth)).statusCode).toBe(200);
      await t.repos.transactions.flush();
      const sql = await statements(async () => { expect((await t.get(url, app.auth)).statusCode).toBe(200); });
      // the vehicle's recent devices the application reads (one statement), the page (nothing remains: no count)
      expect(sql).toHaveLength(2);
      expect(sql.filter((s) => /from "vehicles"/.test(s))).toEqual([]);
    }
  });

  it('counts `remaining` up to the cap, not over the whole history', async () => {
    const app = await t.make.application();
    await partitionsFor(t.db.knex, 'transactions', '2026-01-01T00:00:00Z');
    await t.db.knex.raw(`
      INSERT INTO transactions (id, application_id, ts, path, status_code, method, service)
      SELECT gen_random_uuid(), ?, timestamp '2026-01-01' + g * interval '1 second', '/x', 200, 'GET', 's'
        FROM generate_series(1, ?) g`, [app.id, REMAINING_CAP + 50]);
    const body = (await t.get('/api/v1/transactions?limit=5&until=2026-06-01', app.auth)).json();
    expect(body.transactions).toHaveLength(5);
    expect(body.meta.pagination.remaining).toBe(REMAINING_CAP);
    expect(body.meta.pagination.links.prior).toBeTruthy();
  });
});

describe('caches end with the access', () => {
  it('a rotated secret stops working at once, the new one works', async () => {
    const app = await t.make.application();
    expect((await t.get('/api/v1/devices', app.auth)).statusCode).toBe(200);
    const secret = await t.repos.applications.rotateSecret(app.id);
    expect((await t.get('/api/v1/devices', app.auth)).statusCode).toBe(401);
    expect((await t.get('/api/v1/devices', basic(app.id, secret))).statusCode).toBe(200);
  });

  it('a deregistered device cannot be read right after, although its read was cached', async () => {
    const app = await t.make.application();
    const device = await t.make.device(app);
    const url = `/api/v1/devices/${device.id}/messages`;
    expect((await t.get(url, app.auth)).statusCode).toBe(200);
    const del = await t.app.inject({ method: 'DELETE', url: `/api/v1/devices/${device.id}`, headers: { authorization: app.auth } });
    expect(del.statusCode).toBeLessThan(300);
    expect((await t.get(url, app.auth)).statusCode).toBe(404);
  });

  it('a device authorized after a refused read is readable at once (refusals are not cached)', async () => {
    const app = await t.make.application();
    const device = await t.make.device();
    const url = `/api/v1/devices/${device.id}/messages`;
    expect((await t.get(url, app.auth)).statusCode).toBe(404);
    await t.repos.devices.authorize(device.id, app.id);
    await t.repos.devices.register(app.id, device.id);
    expect((await t.get(url, app.auth)).statusCode).toBe(200);
  });
});
