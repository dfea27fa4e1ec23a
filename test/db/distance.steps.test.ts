import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { framesToMessages, rowsOf, runStage, storeFleet, storeFrames, vehicleTotal, vehicleWithDevice, type Frame } from './distance.fixtures.js';
import { distancePart } from '../../db/distance/triggers.sql.js';
import { insertPart } from '../../db/repositories/ingest.repository.js';
import { messageReads } from '../helpers/plan-reads.js';
import type { Knex } from 'knex';
import { storedMessages } from '../helpers/telemetry.factory.js';

let t: TestApp;
beforeAll(async () => { t = await buildTestApp(); });
afterAll(async () => { await t?.close(); });

const T0 = Date.UTC(2026, 0, 15, 12, 0, 0);

async function drive(frames: Frame[], t0 = T0) {
  const { device, vehicle } = await vehicleWithDevice(t, t0);
  await runStage(t, async (trx) => [await storeFrames(trx, t, device.id, vehicle.id, t0, frames)]);
  return { device, vehicle };
}

/** The steps stored on the messages that counted for the vehicle, in time order. */
async function sources(vehicleId: string) {
  const rows = await t.db.knex('messages').select({ source: 'step_source', meters: 'step_m' }).where({ step_vehicle_id: vehicleId })
    .orderBy([{ column: 'ts' }, { column: 'id' }]);
  return rows.map((r: any) => `${r.source}:${Math.round(Number(r.meters))}`);
}

describe('distance steps', () => {
  it('measures a GPS track on the spheroid', async () => {
    const { vehicle } = await drive([0, 1, 2, 3, 4, 5].map((k) => ({ s: k * 5, north: k * 100, speed: 72 })));
    const total = await vehicleTotal(t, vehicle.id);
    expect(total.total).toBeGreaterThan(495);
    expect(total.total).toBeLessThan(505);
    expect(total.gps).toBeCloseTo(total.total, 6);
    expect(await sources(vehicle.id)).toEqual(['none:0', 'gps:100', 'gps:100', 'gps:100', 'gps:100', 'gps:100']);
  });

  it('integrates vehicle speed (trapezoid) when there is no location', async () => {
    const { vehicle } = await drive([{ s: 0, speed: 0 }, { s: 5, speed: 36 }, { s: 10, speed: 72 }, { s: 15, speed: 72 }]);
    // (0+10)/2·5 + (10+20)/2·5 + 20·5 = 25 + 75 + 100 m
    expect((await vehicleTotal(t, vehicle.id)).vss).toBeCloseTo(200, 6);
    expect(await sources(vehicle.id)).toEqual(['none:0', 'vss:25', 'vss:75', 'vss:100']);
  });

  it('integrates no speed across a reporting gap of more than a minute', async () => {
    // 60 s at 36 km/h: 600 m; then 61 s without a frame, between 36 and 0 km/h: nothing known, nothing counted
    const { vehicle } = await drive([{ s: 0, speed: 36 }, { s: 60, speed: 36 }, { s: 121, speed: 0 }]);
    expect(await sources(vehicle.id)).toEqual(['none:0', 'vss:600', 'none:0']);
  });

  it('counts no distance for a parked car whose GPS wanders', async () => {
    const { vehicle } = await drive([{ s: 0, north: 0, speed: 0 }, { s: 5, north: 4, speed: 0 }, { s: 10, north: 1 }, { s: 15, north: 6 }]);
    expect((await vehicleTotal(t, vehicle.id)).total).toBe(0);
  });

  it('takes the vehicle speed over a GPS jump no car can make', async () => {
    const { vehicle } = await drive([{ s: 0, north: 0, speed: 72 }, { s: 5, north: 5000, speed: 72 }]);
    expect(await sources(vehicle.id)).toEqual(['none:0', 'vss:100']);
  });

  it('re-measures only a late frame and its successor, leaving the total right', async () => {
    const { device, vehicle } = await drive([0, 2, 4].map((k) => ({ s: k * 5, north: k * 100, speed: 72 })));
    const before = (await vehicleTotal(t, vehicle.id)).total;
    // A late frame 30 m east of the straight line at 5 s: the detour adds 2·√(100² + 30²) − 200 ≈ 8.8 m.
    const late = await runStage(t, async (trx) => [await storeFrames(trx, t, device.id, vehicle.id, T0, [{ s: 5, north: 100, east: 30, speed: 72 }])]);
    expect(late.events).toEqual([]);
    const after = (await vehicleTotal(t, vehicle.id)).total;
    expect(after - before).toBeGreaterThan(8.2);
    expect(after - before).toBeLessThan(9.4);
    const steps = await t.db.knex('messages').where({ step_vehicle_id: vehicle.id }).sum({ m: 'step_m' }).first();
    expect(Number(steps!.m)).toBeCloseTo(after, 6);
    expect(await sources(vehicle.id)).toHaveLength(4);
  });

  it('measures the frame after a re-sent one from its real predecessor', async () => {
    const { device, vehicle } = await drive([{ s: 0, north: 0, speed: 72, id: 'a' }, { s: 5, north: 100, speed: 72, id: 'b' }]);
    // 'b' again (the same frame re-sent): skipped, so 'c' follows the stored 'b'
    const again = await runStage(t, async (trx) => [await storeFrames(trx, t, device.id, vehicle.id, T0,
      [{ s: 5, north: 100, speed: 72, id: 'b' }, { s: 15, north: 200, speed: 72, id: 'c' }])]);
    expect(again.statements).toBe(1);
    expect(await sources(vehicle.id)).toEqual(['none:0', 'gps:100', 'gps:100']);
    expect((await vehicleTotal(t, vehicle.id)).total).toBeCloseTo(200, 0);
  });

  it('runs one statement for one device as for twenty, live and with late frames', async () => {
    const fleet = async (n: number) => Promise.all(Array.from({ length: n }, () => vehicleWithDevice(t, T0)));
    const frames = [0, 1, 2].map((k) => ({ s: k * 5, north: k * 50, speed: 36 }));
    const [one, twenty] = [await fleet(1), await fleet(20)];
    const a = await runStage(t, (trx) => storeFleet(trx, t, one, T0, frames));
    const b = await runStage(t, (trx) => storeFleet(trx, t, twenty, T0, frames));
    expect(a.statements).toBe(1);
    expect(b.statements).toBe(a.statements);
    for (const d of twenty) expect((await vehicleTotal(t, d.vehicle.id)).total).toBeCloseTo(100, 0);
    const late = [{ s: 7, north: 70, east: 10, speed: 36 }];
    const c = await runStage(t, (trx) => storeFleet(trx, t, twenty, T0, late));
    expect(c.statements).toBe(1);
    for (const d of twenty) expect((await vehicleTotal(t, d.vehicle.id)).total).toBeGreaterThan(100.5);
  });

  /** The frames stored as the gateway stores them, then the distance statement, each run by its generic plan: their reads. */
  async function storeAndMeasure(trx: Knex, deviceId: string, vehicleId: string, frames: Frame[], hint?: { ts: Date; id: string }) {
    const messages = framesToMessages(deviceId, vehicleId, T0, frames);
    const previousLatest = (await t.repos.ingest.latestTimestamps([deviceId], trx)).get(deviceId) ?? null;
    const inserting = await messageReads(trx, insertPart(rowsOf(messages), [deviceId], [hint]));
    const stored = await trx('messages').whereIn('id', messages.map((m) => m.id)).select('id', 'step_m', 'step_source', 'step_vehicle_id');
    const steps = new Map(stored.map((r: any) => [r.id, { meters: Number(r.step_m), source: r.step_source, vehicleId: r.step_vehicle_id }]));
    for (const m of messages) m.step = steps.get(m.id);
    messages.sort((a, b) => a.timestamp.getTime() - b.timestamp.getTime());
    const distance = await messageReads(trx, distancePart([{ deviceId, messages, previousLatest }])!);
    return { inserting, distance };
  }

  it('finds a new frame\'s neighbours in the device\'s history without reading it, whatever the statistics', async () => {
    // 2,000 stored messages, no ANALYZE since; the statements' generic plans (what a prepared statement runs).
    const { device, vehicle } = await vehicleWithDevice(t, T0);
    const history = Array.from({ length: 2000 }, (_, k) => ({ s: k, north: k * 10, speed: 36 }));
    await t.db.knex.transaction(async (trx) => { await storeFrames(trx, t, device.id, vehicle.id, T0, history); });
    const { inserting, distance } = await t.db.knex.transaction(async (trx) =>
      storeAndMeasure(trx, device.id, vehicle.id, [{ s: 999.5, north: 9995, speed: 36 }, { s: 2000, north: 20000, speed: 36 }]));
    expect(inserting.length).toBeGreaterThan(0);
    expect(distance.length).toBeGreaterThan(0);
    // per lookup (rows are per loop): the device's newest message, a late one's predecessor, its successor and that
    // one's predecessor; never the history
    for (const r of [...inserting, ...distance]) expect(r.rows, `${r.node} on messages`).toBeLessThanOrEqual(2);
  });

  it('reads only the device\'s newest message for an in-order batch', async () => {
    const { device, vehicle } = await vehicleWithDevice(t, T0);
    await t.db.knex.transaction(async (trx) => { await storeFrames(trx, t, device.id, vehicle.id, T0, [{ s: 0, north: 0, speed: 36 }]); });
    const stored = await t.db.knex('messages').where({ device_id: device.id }).first('ts', 'id');
    const frames = Array.from({ length: 10 }, (_, k) => ({ s: k + 1, north: (k + 1) * 10, speed: 36 }));
    // with the gateway's hint (the newest message it stored): one read from it on, the whole history never
    const { inserting, distance } = await t.db.knex.transaction(async (trx) =>
      storeAndMeasure(trx, device.id, vehicle.id, frames, { ts: new Date(stored.ts), id: stored.id }));
    // one probe of each day's partition from the hint on (the days ahead are empty), one row read
    expect(inserting.filter((r) => r.rows > 0).reduce((n, r) => n + r.loops, 0)).toBe(1);
    expect(inserting.reduce((n, r) => n + r.rows * r.loops, 0)).toBe(1);
    // the distance statement reads no message (its updates by key find an empty list)
    expect(distance.reduce((n, r) => n + r.rows * r.loops, 0)).toBe(0);
    // EXPLAIN ANALYZE ran the statements: the steps are those of the whole track, 10 m each from the stored message on
    const steps = await t.db.knex('messages').where({ device_id: device.id }).orderBy('ts').select({ source: 'step_source', meters: 'step_m' });
    expect(steps.slice(1).map((r: any) => `${r.source}:${Math.round(Number(r.meters))}`)).toEqual(Array(10).fill('gps:10'));

    // without one (a gateway's first batch of the device): the hinted read finds nothing, the newest is read once
    const more = Array.from({ length: 3 }, (_, k) => ({ s: k + 11, north: (k + 11) * 10, speed: 36 }));
    const unhinted = await t.db.knex.transaction(async (trx) => storeAndMeasure(trx, device.id, vehicle.id, more));
    expect(unhinted.inserting.reduce((n, r) => n + r.rows * r.loops, 0)).toBe(1);
  });
});

describe('distance steps, whatever the arrival', () => {
  // A track with a GPS gap (speed only), a stop, and two frames in the same second; the steps a device's messages
  // get must not depend on how the frames were batched or in what order the batches came.
  const track: Frame[] = [
    { s: 0, north: 0, speed: 30 }, { s: 2, north: 15, speed: 30 }, { s: 4, north: 32, speed: 36 }, { s: 6, speed: 40 },
    { s: 8, speed: 40 }, { s: 10, north: 95, speed: 36 }, { s: 10, north: 96, speed: 36 }, { s: 12, north: 110, speed: 0 },
    { s: 14, north: 111, speed: 0 }, { s: 16, north: 125, speed: 30 }, { s: 18, north: 140, speed: 30 }, { s: 20, north: 160, speed: 36 },
  ];
  const batchings: [string, number[][]][] = [
    ['one batch', [track.map((_, k) => k)]],
    ['in order, a frame at a time', track.map((_, k) => [k])],
    ['in order, in threes', [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9, 10, 11]]],
    ['batches arriving backwards', [[9, 10, 11], [6, 7, 8], [3, 4, 5], [0, 1, 2]]],
    ['shuffled, late frames mixed with new ones', [[0, 5, 11], [2, 7], [1, 3, 10], [4, 6, 9, 8]]],
  ];

  it.each(batchings)('gives each message its step: %s', async (_name, batches) => {
    const { device, vehicle } = await vehicleWithDevice(t, T0);
    for (const b of batches) await runStage(t, async (trx) => [await storeFrames(trx, t, device.id, vehicle.id, T0, b.map((k) => track[k]))]);
    // what the steps must be: each message against the one before it in (ts, id) order
    const { rows } = await t.db.knex.raw(`SELECT step_m AS meters, step_source AS source, ts, id FROM messages
      WHERE device_id = ? ORDER BY ts, id`, [device.id]);
    expect(rows).toHaveLength(track.length);
    const fresh = await t.db.knex.transaction(async (trx) => {
      // the same messages stored again in one batch from scratch, all new (no history before them)
      const all = await storedMessages(trx).where({ device_id: device.id }).orderBy([{ column: 'ts' }, { column: 'id' }]);
      await trx('messages').where({ device_id: device.id }).del();
      await t.repos.ingest.insertMessages(all.map((m: any) => ({
        id: m.id, deviceId: device.id, timestamp: new Date(m.ts), kind: m.kind, data: m.data,
        lat: m.data.location?.coordinates[1] ?? null, lon: m.data.location?.coordinates[0] ?? null, extra: null, receivedAt: new Date(),
      })), trx);
      const out = (await trx.raw('SELECT step_m AS meters, step_source AS source FROM messages WHERE device_id = ? ORDER BY ts, id', [device.id])).rows;
      throw Object.assign(new Error('rollback'), { out });
    }).catch((e: any) => e.out);
    expect(rows.map((r: any) => [r.source, Number(r.meters).toFixed(6)])).toEqual(fresh.map((r: any) => [r.source, Number(r.meters).toFixed(6)]));
    const steps = rows.reduce((n: number, r: any) => n + Number(r.meters), 0);
    expect((await vehicleTotal(t, vehicle.id)).total).toBeCloseTo(steps, 6);
  });
});
