import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { silentLogger } from '../../lib/logger.js';
import { diagnosticsStage } from '../../gateway/stages/diagnostics.stage.js';
import { collisionsStage } from '../../gateway/stages/collisions.stage.js';
import type { DeviceBatch, IngestedMessage } from '../../gateway/ingest.types.js';
import { recordStatements } from '../helpers/statements.js';

let t: TestApp;
beforeAll(async () => { t = await buildTestApp(); });
afterAll(async () => { await t?.close(); });

const G = 9.80665;

/** Stores `n` devices' frames (codes, battery, an impact) and returns them as the pipeline would hand them to the stages. */
async function batchOf(n: number, impact = 4 * G): Promise<DeviceBatch[]> {
  const app = await t.make.application();
  const t0 = Date.now() - 60_000;
  const batches: DeviceBatch[] = [];
  for (let i = 0; i < n; i++) {
    const device = await t.make.device(app.principal);
    const vehicle = await t.repos.vehicles.upsertByVin(`VVBATCH${String(randomUUID().replace(/\D/g, '')).slice(0, 10).padEnd(10, '1')}`, async () => ({}));
    await t.repos.ingest.associateAt(device.id, vehicle.id, new Date(t0 - 1000));
    const messages: IngestedMessage[] = [0, 1, 2].map((k) => ({
      id: randomUUID(), deviceId: device.id, timestamp: new Date(t0 + k * 1000), kind: k === 0 ? 'startup' : 'telemetry', frameId: null,
      data: { rpm: 900, vehicleSpeed: 50, accel: { maxX: 0.1, minX: k === 2 ? -impact : -0.1, maxY: 0.1, minY: -0.1, maxZ: G, minZ: G } },
      lat: 32.7, lon: -96.8, gps: null, vin: null, dtcs: k === 1 ? [] : ['P0301'], battery: k === 0 ? { voltage: 12.1, crankingVoltage: 9.5 } : null,
      collision: null, receivedAt: new Date(), vehicleId: vehicle.id,
    }));
    await t.repos.ingest.insertMessages(messages.map((m) => ({
      id: m.id, deviceId: m.deviceId, timestamp: m.timestamp, frameId: null, kind: m.kind, data: m.data, lon: m.lon, lat: m.lat,
      extra: { dtcs: m.dtcs, ...(m.battery ? { battery: m.battery } : {}) }, receivedAt: m.receivedAt,
    })));
    batches.push({ deviceId: device.id, messages, previousLatest: null });
  }
  return batches;
}

/** Statements the two stages run for the batch, and the events they return. */
async function run(devices: DeviceBatch[]) {
  const deps = { config: t.config, knex: t.db.knex, repos: t.repos, log: silentLogger };
  const stages = [diagnosticsStage(deps), collisionsStage(deps)];
  const { result: events, sql } = await recordStatements(t.db.knex, () => t.db.knex.transaction(async (trx) => {
    const out = [];
    for (const s of stages) out.push(...await s.apply({ trx, devices }));
    return out;
  }));
  return { statements: sql.length, events };
}

describe('diagnostics and collisions stages', () => {
  it('run the same number of statements for one device as for twenty', async () => {
    const one = await run(await batchOf(1));
    const twenty = await run(await batchOf(20));
    expect(one.statements).toBeLessThanOrEqual(8);
    expect(twenty.statements).toBe(one.statements);
    // per device: dtc-on at 0 s, dtc-off at 1 s, dtc-on at 2 s, one collision at 2 s
    expect(one.events.map((e) => e.eventType)).toEqual(['dtc-on', 'dtc-off', 'dtc-on', 'collision']);
    expect(twenty.events).toHaveLength(80);
  });

  it('spend no collision statement on a batch of new frames without a candidate sample, and find one just above the threshold', async () => {
    const deps = { config: t.config, knex: t.db.knex, repos: t.repos, log: silentLogger };
    const threshold = t.config.collisionImpactG * G;
    const counted = async (devices: DeviceBatch[]) => {
      const { result: events, sql } = await recordStatements(t.db.knex,
        () => t.db.knex.transaction((trx) => collisionsStage(deps).apply({ trx, devices })), /collisions/i); // not BEGIN/COMMIT
      return { statements: sql.length, events };
    };
    const below = await counted(await batchOf(5, threshold * 0.999));
    expect(below).toEqual({ statements: 0, events: [] });
    const above = await counted(await batchOf(5, threshold * 1.001));
    expect(above.statements).toBeGreaterThan(0);
    expect(above.events).toHaveLength(5);
  });
});
