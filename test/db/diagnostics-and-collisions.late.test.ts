import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { silentLogger } from '../../lib/logger.js';
import { diagnosticsStage } from '../../gateway/stages/diagnostics.stage.js';
import { collisionsStage } from '../../gateway/stages/collisions.stage.js';
import type { DeviceBatch, IngestedMessage } from '../../gateway/ingest.types.js';
import { partitionsFor } from '../helpers/partitions.js';

// How far back a late frame makes the collisions and trouble-code stages re-read (lateRecomputeMaxMessages: 200 here).
let t: TestApp;
beforeAll(async () => {
  t = await buildTestApp({ lateRecomputeMaxMessages: 200 });
  // a fleet around the devices under test (50 devices, 600 frames each), so that the planner sees what it sees in
  // service: a device's messages are a small part of the table, read through its index
  const app = await t.make.application();
  const fleet = [];
  for (let i = 0; i < 50; i++) fleet.push((await t.make.device(app.principal)).id);
  await partitionsFor(t.db.knex, 'messages', T0, T0 + 600_000);
  await t.db.knex.raw(`
    INSERT INTO messages (id, device_id, ts, received_at)
    SELECT message_uuid(x.ts), x.d, x.ts, now()
    FROM (SELECT d, to_timestamp(?::float8 / 1000 + i) AS ts FROM unnest(?::uuid[]) AS d, generate_series(0, 599) AS i) x`, [T0, fleet]);
});
afterAll(async () => { await t?.close(); });

const G = 9.80665;
const T0 = Date.UTC(2026, 2, 1, 9, 0, 0);
const accel = (minX: number) => ({ maxX: 0.1, minX, maxY: 0.1, minY: -0.1, maxZ: G, minZ: G });

/** A device that drove `n` seconds, a frame a second at 50 km/h with an accelerometer window and no trouble code. */
async function history(n: number): Promise<string> {
  const app = await t.make.application();
  const device = await t.make.device(app.principal);
  await partitionsFor(t.db.knex, 'messages', T0, T0 + n * 1000);
  await t.db.knex.raw(`
    INSERT INTO messages (id, device_id, ts, num, location, extra, received_at)
    SELECT gen_random_uuid(), ?::uuid, to_timestamp((?::float8 + i * 1000) / 1000),
      message_num(jsonb_build_object('vehicleSpeed', 50, 'accel', ?::jsonb), NULL), ST_SetSRID(ST_MakePoint(-96.8, 32.7 + i * 0.0001), 4326),
      jsonb_build_object('dtcs', '[]'::jsonb), now()
    FROM generate_series(0, ? - 1) AS i`, [device.id, T0, JSON.stringify(accel(-0.1)), n]);
  // as the platform's auto-analyze does once a table has grown (db/connection.ts): the plans then know a device's rows
  await t.db.knex.raw('ANALYZE messages');
  return device.id;
}

/** A frame at `s` seconds after T0: an impact of 4 g while moving, reporting P0301. */
function impactAt(deviceId: string, s: number): IngestedMessage {
  return {
    id: randomUUID(), deviceId, timestamp: new Date(T0 + s * 1000), kind: 'telemetry', frameId: null,
    data: { vehicleSpeed: 50, accel: accel(-4 * G) }, lat: 32.7, lon: -96.8, gps: null, vin: null, dtcs: ['P0301'], battery: null,
    collision: null, receivedAt: new Date(), vehicleId: null,
  };
}

async function messagesRead(trx: Knex): Promise<number> {
  const { rows } = await trx.raw(`SELECT coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0) AS n FROM pg_stat_xact_user_tables
    WHERE relname = 'messages'`);
  return Number(rows[0]?.n ?? 0);
}

/** Stores the late frames and runs both stages on them, as one batch; returns the messages each stage read. */
async function late(deviceId: string, ...ms: IngestedMessage[]) {
  const deps = { config: t.config, knex: t.db.knex, repos: t.repos, log: silentLogger } as any;
  const [{ latest }] = await t.db.knex('messages').where({ device_id: deviceId }).max('ts as latest');
  await t.repos.ingest.insertMessages(ms.map((m) => ({
    id: m.id, deviceId, timestamp: m.timestamp, frameId: null, kind: m.kind, data: m.data, lon: m.lon, lat: m.lat,
    extra: m.dtcs ? { dtcs: m.dtcs } : null, receivedAt: m.receivedAt,
  })));
  const devices: DeviceBatch[] = [{ deviceId, messages: ms, previousLatest: new Date(latest) }];
  return t.db.knex.transaction(async (trx) => {
    const reads: Record<string, number> = {};
    for (const stage of [diagnosticsStage(deps), collisionsStage(deps)]) {
      const before = await messagesRead(trx);
      await stage.apply({ trx, devices });
      reads[stage.name] = (await messagesRead(trx)) - before;
    }
    return reads;
  });
}

const collisionsOf = (id: string) => t.db.knex('collisions').where({ device_id: id }).orderBy('ts');
const occurrencesOf = (id: string) => t.db.knex('dtc_occurrences').where({ device_id: id }).orderBy('start');

describe('a late frame into a long history (collisions and trouble codes)', () => {
  it('re-reads no more than the bound, and is stored without changing them when older than it', async () => {
    const id = await history(5_000);
    const reads = await late(id, impactAt(id, 1_000.5));
    // a few times the bound of 200 (the walk back to the frame, the read of where the bound stops, the span from it):
    // not the 4,000 messages after the frame
    expect(reads.diagnostics).toBeLessThan(700);
    expect(reads.collisions).toBeLessThan(700);
    expect(await collisionsOf(id)).toHaveLength(0);
    expect(await occurrencesOf(id)).toHaveLength(0);
    expect(await t.db.knex('messages').where({ device_id: id, ts: new Date(T0 + 1_000_500) })).toHaveLength(1);
  });

  it('reads a handful of messages for a frame one message late, not the bound', async () => {
    const id = await history(5_000);
    const reads = await late(id, impactAt(id, 4_998.5));
    // the newest message, the walk back past the frame (three entries), the span (the frame and the one after it): not the
    // 200 newest messages of the bound
    expect(reads.diagnostics).toBeLessThan(20);
    expect(reads.collisions).toBeLessThan(20);
    expect((await collisionsOf(id)).map((c: any) => new Date(c.ts).getTime() - T0)).toEqual([4_998_500]);
    expect((await occurrencesOf(id)).map((o: any) => [o.number, new Date(o.start).getTime() - T0, new Date(o.stop).getTime() - T0]))
      .toEqual([['P0301', 4_998_500, 4_999_000]]);
  });

  it('costs no statement for a batch whose late frames carry no accelerometer window, trouble codes or collision', async () => {
    const id = await history(5_000);
    // a late frame with a speed only, then an in-order frame whose accelerometer window is below the impact threshold
    const speedOnly: IngestedMessage = { ...impactAt(id, 4_000.5), data: { vehicleSpeed: 50 }, dtcs: null };
    const calm: IngestedMessage = { ...impactAt(id, 5_000), data: { vehicleSpeed: 50, accel: accel(-0.2) }, dtcs: null };
    const reads = await late(id, speedOnly, calm);
    expect(reads).toEqual({ diagnostics: 0, collisions: 0 });
    expect(await collisionsOf(id)).toHaveLength(0);
  });

  it('derives the collision and the trouble code of a late frame within the bound as before', async () => {
    const id = await history(5_000);
    await late(id, impactAt(id, 4_900.5));
    const [c, ...more] = await collisionsOf(id);
    expect(more).toHaveLength(0);
    expect(new Date(c.ts).getTime()).toBe(T0 + 4_900_500);
    // P0301 from the late report until the next report (without it), a second later
    expect((await occurrencesOf(id)).map((o: any) => [o.number, new Date(o.start).getTime() - T0, new Date(o.stop).getTime() - T0]))
      .toEqual([['P0301', 4_900_500, 4_901_000]]);
  });
});
