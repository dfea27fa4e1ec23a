import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { framesToMessages, storeFrames, vehicleWithDevice } from './distance.fixtures.js';
import { distancePart } from '../../db/distance/triggers.sql.js';
import { messageReads } from '../helpers/plan-reads.js';
import { partitionsFor } from '../helpers/partitions.js';

// Its own database: the messages table is nearly empty when the plan is made, as on a new deployment.
let t: TestApp;
beforeAll(async () => { t = await buildTestApp(); });
afterAll(async () => { await t?.close(); });

const T0 = Date.UTC(2026, 1, 1, 12, 0, 0);

describe('generic plans made on a small messages table', () => {
  it('keep the distance statement off the table as it grows (its updates run only when they have rows)', async () => {
    const { device, vehicle } = await vehicleWithDevice(t, T0);
    await t.db.knex.transaction(async (trx) => { await storeFrames(trx, t, device.id, vehicle.id, T0, [{ s: 0, north: 0, speed: 36 }]); });
    const messages = framesToMessages(device.id, vehicle.id, T0, [{ s: 1, north: 10, speed: 36 }]);
    const other = await vehicleWithDevice(t, T0);
    await partitionsFor(t.db.knex, 'messages', T0, T0 + 6_000_000);
    const reads = await t.db.knex.transaction(async (trx) => {
      await trx('messages').insert(messages.map((m) => ({
        id: m.id, device_id: device.id, ts: m.timestamp, received_at: m.receivedAt,
        step_m: 10, step_source: 'gps', step_vehicle_id: vehicle.id,
      })));
      return messageReads(trx, distancePart([{ deviceId: device.id, messages, previousLatest: new Date(T0) }])!, async (g) => {
        // the table grows under the plan made above: 5,000 messages of another device
        await g.raw(`INSERT INTO messages (id, device_id, ts, received_at)
          SELECT message_uuid(x.ts), ?, x.ts, now() FROM (SELECT to_timestamp(? / 1000.0) + k * interval '1 second' AS ts
          FROM generate_series(1, 5000) AS k) x`, [other.device.id, T0]);
      });
    });
    // an in-order batch without re-measured steps or moved vehicles reads no message
    expect(reads.reduce((n, r) => n + r.rows * r.loops, 0)).toBe(0);
  });
});
