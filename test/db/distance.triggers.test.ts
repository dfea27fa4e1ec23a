import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { currentState } from '../../db/distance/estimate.sql.js';
import type { TriggerType } from '../../db/distance/odometers.repository.js';
import { runStage, storeFrames, vehicleWithDevice } from './distance.fixtures.js';

let t: TestApp;
beforeAll(async () => { t = await buildTestApp(); });
afterAll(async () => { await t?.close(); });

const T0 = Date.now() - 600_000;
/** A straight drive north: one frame every 5 s, 100 m apart, from `fromM` on. */
const leg = (fromS: number, fromM: number, n: number) =>
  Array.from({ length: n }, (_, k) => ({ s: fromS + k * 5, north: fromM + k * 100, speed: 72 }));

async function setup(reading?: { m: number }) {
  const v = await vehicleWithDevice(t, T0);
  if (reading) await t.repos.odometers.createOdometer(v.app.id, v.vehicle.id, reading.m, new Date(T0 - 600_000));
  const trigger = async (type: TriggerType, thresholdM: number) => t.repos.odometers.createTrigger(
    v.app.id, v.vehicle.id, type, thresholdM, await currentState(t.db.knex, v.app.id, v.vehicle.id));
  const drive = (frames: ReturnType<typeof leg>) =>
    runStage(t, async (trx) => [await storeFrames(trx, t, v.device.id, v.vehicle.id, T0, frames)]);
  return { ...v, trigger, drive };
}

const fired = (events: { eventType: string; objectId: string | null; timestamp: Date; meta: any }[], id: string) =>
  events.filter((e) => e.eventType === 'distance-trigger' && e.objectId === id)
    .map((e) => [(e.timestamp.getTime() - T0) / 1000, Math.round(e.meta.estimatedOdometer), e.meta.odometerTrigger.events]);

describe('odometer triggers at ingest', () => {
  it('from_now fires once, at the step where the distance since creation reaches the threshold', async () => {
    const v = await setup();
    const trg = await v.trigger('from_now', 250);
    const first = await v.drive(leg(0, 0, 6)); // 0..500 m
    expect(fired(first.events, trg.id)).toEqual([[15, 300, 1]]);
    const second = await v.drive(leg(30, 600, 6));
    expect(fired(second.events, trg.id)).toEqual([]);
    expect((await t.repos.odometers.getTrigger(v.app.id, trg.id))!.events).toBe(1);
    const meta = first.events[0].meta as any;
    expect(first.events[0]).toMatchObject({ objectType: 'odometer-trigger', applicationId: v.app.id, vehicleId: v.vehicle.id, deviceId: v.device.id });
    expect(meta.odometerTrigger).toMatchObject({ id: trg.id, vehicleId: v.vehicle.id, type: 'from_now', threshold: 250, unit: 'm', events: 1 });
    expect(meta.odometerTrigger.links.vehicle).toMatch(new RegExp(`/api/v1/vehicles/${v.vehicle.id}$`));
  });

  it('specific fires once when the estimate from the reading reaches the threshold', async () => {
    const v = await setup({ m: 10_000 });
    const trg = await v.trigger('specific', 10_350);
    const first = await v.drive(leg(0, 0, 6)); // estimate 10 000 .. 10 500 m
    expect(fired(first.events, trg.id)).toEqual([[20, 10_400, 1]]);
    expect(fired((await v.drive(leg(30, 600, 3))).events, trg.id)).toEqual([]);
  });

  it('milestone fires at every multiple, across batches, and never twice for one', async () => {
    const v = await setup({ m: 10_050 });
    const trg = await v.trigger('milestone', 200); // next multiples: 10 200, 10 400, 10 600 …
    const first = await v.drive(leg(0, 0, 6)); // estimate 10 050 .. 10 550 m
    expect(fired(first.events, trg.id)).toEqual([[10, 10_250, 1], [20, 10_450, 2]]);
    const second = await v.drive(leg(30, 600, 2)); // 10 650, 10 750
    expect(fired(second.events, trg.id)).toEqual([[30, 10_650, 3]]);
    // A late frame between 0 and 5 s, off the line: it re-measures two steps but reaches no new multiple.
    const late = await v.drive([{ s: 2, north: 40, speed: 72 }]);
    expect(fired(late.events, trg.id)).toEqual([]);
    expect((await t.repos.odometers.getTrigger(v.app.id, trg.id))!.events).toBe(3);
    const stored = await t.db.knex('events').where({ object_id: trg.id, event_type: 'distance-trigger' }).count({ n: '*' }).first();
    expect(Number(stored!.n)).toBe(3);
  });

  it('milestone skips the multiples a new reading jumps over and fires those the driving crosses', async () => {
    const v = await setup();
    const trg = await v.trigger('milestone', 250); // no reading: estimate 0, next multiple 250 m
    expect(fired((await v.drive(leg(0, 0, 2))).events, trg.id)).toEqual([]); // 100 m
    await t.repos.odometers.createOdometer(v.app.id, v.vehicle.id, 1_000_000, new Date(T0 + 6_000));
    const after = await v.drive(leg(10, 200, 4)); // 1 000 000 → 1 000 400 m (the first step, from 100 m, is after the reading)
    expect(fired(after.events, trg.id)).toEqual([[20, 1_000_300, 1]]); // not 4 000 events for 250 … 1 000 000
  });

  it('counts the distance ingested after the trigger was set, even from frames stamped before (backlog, compressed runs)', async () => {
    const v = await setup();
    await v.drive(leg(-100, 0, 3)); // 200 m ingested before the trigger: not counted
    const trg = await v.trigger('from_now', 250);
    const old = await runStage(t, async (trx) => [await storeFrames(trx, t, v.device.id, v.vehicle.id, T0 - 3_600_000, leg(0, 0, 4))]);
    expect(fired(old.events, trg.id)).toEqual([[-3600 + 15, 500, 1]]); // estimate (no reading): all 500 m seen
  });
});
