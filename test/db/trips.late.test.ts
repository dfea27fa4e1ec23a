import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { tripStats } from '../../db/trips/formulas.js';
import { sumsOf, type TripSumsRow } from '../../db/trips/segment.js';
import { LON, at, batch, drive, feed, longDrive, north, tripEvents, tripsOf, newDevice, rounded, type F } from './trips.fixtures.js';

// Late frames past the re-derivation bound (lateRecomputeMaxMessages): a long trip here is longer than the bound.
let t: TestApp;
let small: TestApp;
beforeAll(async () => {
  t = await buildTestApp();
  // a bound of 40 messages, so that drives of a few hundred samples are long trips (compared with a fresh derivation)
  small = await buildTestApp({ lateRecomputeMaxMessages: 40 });
});
afterAll(async () => { await t?.close(); await small?.close(); });

const device = newDevice;

const statsOf = (trip: TripSumsRow) => rounded(tripStats(sumsOf(trip)));

/** The trips of the frames fed in order to a new device: what the late frames must give. */
async function fresh(a: TestApp, frames: F[]) {
  const id = await device(a);
  await feed(a, id, [...frames].sort((x, y) => x.s - y.s), 25);
  return tripsOf(a, id);
}

/** What a trip's row says that a late frame may change, without its id and times of writing. */
const shape = (r: TripSumsRow & Record<string, any>) => ({
  start: new Date(r.start_ts).getTime(), stop: r.stop_ts && new Date(r.stop_ts).getTime(), start_reason: r.start_reason,
  end_reason: r.end_reason, ...statsOf(r), last_speed: r.last_speed, last_hard: r.last_hard, last_stopped: r.last_stopped,
  last_ts: new Date(r.last_ts).getTime(), start_point: r.start_point, stop_point: r.stop_point,
});

describe('a late frame into a trip longer than the re-derivation bound', () => {
  it('reads a bounded number of messages, whatever the trip\'s length, and the trip counts the frame', async () => {
    const id = await device(t);
    const n = 30_000;
    await longDrive(t, id, 0, n, 50);
    const [before] = await tripsOf(t, id);
    expect(Number(before.message_count)).toBe(n);
    const eventsBefore = await tripEvents(t, id);
    // half a second after the middle sample, on the line between it and the next one
    const mid = n / 2;
    const late: F = { s: mid + 0.5, speed: 50, lat: north((mid + 0.5) * 50 / 3.6), lon: LON };
    const reads: { messages?: number } = {};
    await batch(t, { [id]: [late] }, undefined, reads);
    console.log(`messages read by the trips stage for one late frame into a trip of ${n}: ${reads.messages}`);
    // the stage read a window around the frame (and probed the span), not the trip's 30,000 messages
    expect(reads.messages).toBeLessThan(1_000);
    const [after, ...others] = await tripsOf(t, id);
    expect(others).toHaveLength(0);
    expect(after.id).toBe(before.id);
    expect(Number(after.message_count)).toBe(n + 1);
    const [s0, s1] = [tripStats(sumsOf(before)), tripStats(sumsOf(after))];
    // on a straight line at a constant speed, the frame adds no distance and no time
    expect(s1.distanceByGPS).toBeCloseTo(s0.distanceByGPS, 3);
    expect(s1.distanceByVSS!).toBeCloseTo(s0.distanceByVSS!, 3);
    expect(s1.duration).toBe(s0.duration);
    expect(s1.locationCount).toBe(s0.locationCount + 1);
    expect(await tripEvents(t, id)).toEqual(eventsBefore);
  });
});

describe('late frames spliced into a long trip (bound: 40 messages)', () => {
  // a drive of 121 samples 5 s apart: startup at 0, shutdown at 600
  const base = () => drive(0, 600, 45);

  it('give the closed trip the figures of a fresh derivation: speed, position, accelerometer and fuel', async () => {
    const all = drive(0, 1500, 45); // 301 samples: the window (50 each side) sees neither end
    // three late frames of the trip's middle, the same moment's speed changing, one a hard brake, one with fuel data
    const late: F[] = [
      { s: 701, speed: 20, lat: north(8700), lon: LON + 0.0003, data: { accel: { minX: -6, maxX: 0, minY: 0, maxY: 0, minZ: 9.8, maxZ: 9.8 } } },
      { s: 703, speed: 30, lat: north(8720), lon: LON, data: { engineFuelRate: 4.5 } },
      { s: 704, speed: 60 },
    ];
    const id = await device(small);
    await feed(small, id, all, 25);
    const reads: { messages?: number } = {};
    await batch(small, { [id]: late }, undefined, reads);
    const trips = await tripsOf(small, id);
    const want = await fresh(small, [...all, ...late]);
    expect(trips.map(shape)).toEqual(want.map(shape));
    expect(trips[0].message_count).toBe(all.length + 3);
    // the report card follows the trip's new figures (a hard brake more)
    const [card] = await small.db.knex('report_cards').where({ trip_id: trips[0].id });
    const [wantCard] = await small.db.knex('report_cards').where({ trip_id: want[0].id });
    expect([card.grade, Number(card.score).toPrecision(6)]).toEqual([wantCard.grade, Number(wantCard.score).toPrecision(6)]);
    expect(reads.messages).toBeLessThan(all.length);
  });

  it('advance the open trip near its end, and later frames continue it as if the frame had come in order', async () => {
    const all = base();
    const id = await device(small);
    await feed(small, id, all.filter((f) => f.s <= 400), 25);
    // late: between two stored samples near the open trip's end
    const late: F[] = [{ s: 392, speed: 55, lat: north(4800), lon: LON + 0.0001 }];
    await batch(small, { [id]: late });
    await feed(small, id, all.filter((f) => f.s > 400), 25);
    expect((await tripsOf(small, id)).map(shape)).toEqual((await fresh(small, [...all, ...late])).map(shape));
  });

  it('into the first samples of a trip take its start point from the frame when it is the first with a location', async () => {
    const all = base().map((f, i) => (i > 0 && i < 4 ? { ...f, lat: undefined } : f)).map((f, i) => (i === 0 ? { ...f, lat: undefined } : f));
    const id = await device(small);
    await feed(small, id, all, 25);
    const late: F[] = [{ s: 7, speed: 20, lat: north(20), lon: LON }];
    await batch(small, { [id]: late });
    expect((await tripsOf(small, id)).map(shape)).toEqual((await fresh(small, [...all, ...late])).map(shape));
  });

  it('into a motion trip (no ignition frames) count as a fresh derivation would', async () => {
    const all = drive(0, 900, 40, { ignition: false });
    const id = await device(small);
    await feed(small, id, all, 25);
    const late: F[] = [{ s: 301, speed: 80, lat: north(3000), lon: LON }, { s: 302 }];
    await batch(small, { [id]: late });
    expect((await tripsOf(small, id)).map(shape)).toEqual((await fresh(small, [...all, ...late])).map(shape));
  });

  it('leave the trip as it was where the window cannot see the location before the frame (a long GPS gap)', async () => {
    const all = drive(0, 1500, 45).map((f) => (f.s > 300 && f.s < 1000 ? { ...f, lat: undefined } : f));
    const id = await device(small);
    await feed(small, id, all, 25);
    const before = await tripsOf(small, id);
    await batch(small, { [id]: [{ s: 701, speed: 45, lat: north(8700), lon: LON }] });
    expect(await tripsOf(small, id)).toEqual(before);
  });

  it('leave the trip as it was for a frame that would change its boundaries (a startup), the frame stored', async () => {
    const all = base();
    const id = await device(small);
    await feed(small, id, all, 25);
    const before = await tripsOf(small, id);
    const events = await tripEvents(small, id);
    await batch(small, { [id]: [{ s: 301, kind: 'startup', speed: 0 }] });
    expect(await tripsOf(small, id)).toEqual(before);
    expect(await tripEvents(small, id)).toEqual(events);
    expect(await small.db.knex('messages').where({ device_id: id, ts: at(301) })).toHaveLength(1);
  });

  it('run the same statements for 1 device as for 15: the bound\'s plan, the splice, the report cards', async () => {
    const app = await small.make.application();
    const fleet = async (n: number) => { const ids = []; for (let i = 0; i < n; i++) ids.push((await small.make.device(app.principal)).id); return ids; };
    const [one, many] = [await fleet(1), await fleet(15)];
    const all = drive(0, 600, 45);
    const counts = [];
    for (const ids of [one, many]) {
      await batch(small, Object.fromEntries(ids.map((id) => [id, all])));
      let n = 0;
      await batch(small, Object.fromEntries(ids.map((id) => [id, [{ s: 301, speed: 40, lat: north(3700), lon: LON }]])), () => { n++; });
      counts.push(n);
      for (const id of ids) expect((await tripsOf(small, id))[0].message_count).toBe(all.length + 1);
    }
    expect(counts).toEqual([3, 3]);
  });

  it('re-derive the trips, as before, where the span is within the bound', async () => {
    const all = drive(0, 150, 45);
    const id = await device(small);
    await feed(small, id, all, 10);
    const late: F[] = [{ s: 71, kind: 'shutdown', speed: 0 }];
    await batch(small, { [id]: late });
    expect((await tripsOf(small, id)).map(shape)).toEqual((await fresh(small, [...all, ...late])).map(shape));
  });
});
