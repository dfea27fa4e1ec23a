import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { silentLogger } from '../../lib/logger.js';
import { vehiclesStage } from '../../gateway/stages/vehicles.stage.js';
import type { DeviceBatch, IngestedMessage } from '../../gateway/ingest.types.js';
import { recordStatements } from '../helpers/statements.js';

let t: TestApp;
beforeAll(async () => { t = await buildTestApp(); });
afterAll(async () => { await t?.close(); });

/** A dummy VIN ("VV" + 15 of A-Z/0-9 without I, O, Q), new each time. */
const newVin = () => `VV${randomUUID().replace(/-/g, '').toUpperCase().replace(/[IOQ]/g, 'X').slice(0, 15)}`;

/** `n` devices, each with a startup carrying `vins[i]` (or a new VIN) then a telemetry frame, as the pipeline hands them over. */
async function batchOf(n: number, vinFor: (i: number) => string = () => newVin(), t0 = Date.now() - 60_000): Promise<DeviceBatch[]> {
  const app = await t.make.application();
  const out: DeviceBatch[] = [];
  for (let i = 0; i < n; i++) {
    const device = await t.make.device(app.principal);
    out.push({ deviceId: device.id, previousLatest: null, messages: [0, 1].map((k): IngestedMessage => ({
      id: randomUUID(), deviceId: device.id, timestamp: new Date(t0 + k * 1000), kind: k === 0 ? 'startup' : 'telemetry', frameId: null,
      data: {}, lat: null, lon: null, gps: null, vin: k === 0 ? vinFor(i) : null, dtcs: null, battery: null, collision: null,
      receivedAt: new Date(), vehicleId: null,
    })) });
  }
  return out;
}

/** The stored vehicle id of each VIN. */
async function vehicleIdsByVin(vins: string[]): Promise<Record<string, string>> {
  const rows = await t.db.knex('vehicles').whereIn('vin', vins).select('id', 'vin');
  return Object.fromEntries(rows.map((v: { id: string; vin: string }) => [v.vin, v.id]));
}

async function run(devices: DeviceBatch[]) {
  const stage = vehiclesStage({ config: t.config, knex: t.db.knex, repos: t.repos, log: silentLogger });
  try {
    await stage.prepare?.(devices);
    const { sql } = await recordStatements(t.db.knex, () => t.db.knex.transaction((trx) => stage.apply({ trx, devices })), /device_vehicles|vehicles/);
    return sql.length;
  } finally {
    await stage.close?.();
  }
}

describe('vehicles stage', () => {
  it('runs the same number of statements for one new vehicle as for fifteen, and for known ones', async () => {
    const one = await run(await batchOf(1));
    const vins = Array.from({ length: 15 }, newVin);
    const fifteen = await run(await batchOf(15, (i) => vins[i]));
    expect(one).toBeGreaterThan(0);
    expect(one).toBeLessThanOrEqual(3);
    expect(fifteen).toBe(one);
    // the same fifteen VINs on fifteen other devices: the vehicles exist now
    const known = await run(await batchOf(15, (i) => vins[i]));
    expect(known).toBeGreaterThan(0);
    expect(known).toBeLessThanOrEqual(one);
    expect(Number((await t.db.knex('vehicles').whereIn('vin', vins).count({ n: '*' }))[0].n)).toBe(15);
  });

  it('puts each device in its VIN vehicle from the startup on, one vehicle per VIN, and every message gets it', async () => {
    const shared = newVin();
    const devices = await batchOf(4, (i) => (i < 2 ? shared : newVin()));
    await run(devices);
    const byVin = await vehicleIdsByVin(devices.map((d) => d.messages[0].vin!));
    for (const d of devices) expect(d.messages.map((m) => m.vehicleId)).toEqual([byVin[d.messages[0].vin!], byVin[d.messages[0].vin!]]);
    expect(new Set(Object.values(byVin)).size).toBe(3);
    // the same frames again (a re-run of the batch) change no history
    const before = await t.db.knex('device_vehicles').whereIn('device_id', devices.map((d) => d.deviceId)).count({ n: '*' });
    await run(devices);
    const after = await t.db.knex('device_vehicles').whereIn('device_id', devices.map((d) => d.deviceId)).count({ n: '*' });
    expect(Number(after[0].n)).toBe(Number(before[0].n));
    expect(Number(after[0].n)).toBe(4);
  });

  it('follows a device moved to another vehicle and back within one batch, frame by frame', async () => {
    const [a, b] = [newVin(), newVin()];
    const [device] = await batchOf(1, () => a);
    const t0 = device.messages[0].timestamp.getTime();
    device.messages = [a, b, a].map((vin, k): IngestedMessage => ({
      ...device.messages[0], id: randomUUID(), timestamp: new Date(t0 + k * 1000), vin,
    }));
    await run([device]);
    const history = await t.db.knex('device_vehicles as dv').join('vehicles as v', 'v.id', 'dv.vehicle_id')
      .where('dv.device_id', device.deviceId).orderBy('dv.started_at').select('v.vin');
    expect(history.map((h: { vin: string }) => h.vin)).toEqual([a, b, a]);
    const byVin = await vehicleIdsByVin([a, b]);
    expect(device.messages.map((m) => m.vehicleId)).toEqual([byVin[a], byVin[b], byVin[a]]);
  });
});
