import polyline from '@mapbox/polyline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { tripStats } from '../../db/trips/formulas.js';
import { sumsOf, sweepSilentTrips } from '../../db/trips/segment.js';
import { recordStatements } from '../helpers/statements.js';
import { LAT, LON, at, batch, drive, feed, tripEvents, tripsOf, type F } from './trips.fixtures.js';

let t: TestApp;
beforeAll(async () => { t = await buildTestApp(); });
afterAll(async () => { await t?.close(); });

const device = async () => { const app = await t.make.application(); return (await t.make.device(app.principal)).id; };

describe('trip segmentation', () => {
  it('reads the speed from its slot, where a speed that is not a number counts as none', async () => {
    const [a, b] = [await device(), await device()];
    const frames = drive(0, 300, 36);
    await feed(t, a, frames, 7);
    // the same drive with one sample's speed not a number (another path than the gateway's, which refuses it)
    await feed(t, b, frames.map((f, i) => ({ ...f, ...(i === 30 ? { data: { vehicleSpeed: 'n/a' } } : {}) })), 7);
    const [ta, tb] = [(await tripsOf(t, a))[0], (await tripsOf(t, b))[0]];
    const [sa, sb] = [tripStats(sumsOf(ta)), tripStats(sumsOf(tb))];
    expect(sa.messageCount).toBe(frames.length);
    expect(sb.messageCount).toBe(frames.length);
    expect(sa.distanceByVSS).toBeCloseTo(2950, 0);
    // b's sample without a speed: the speed samples around it are 10 s apart, the same distance at a constant speed
    expect(sb.distanceByVSS).toBeCloseTo(sa.distanceByVSS!, 6);
    expect(Number(tb.speed_n)).toBe(Number(ta.speed_n) - 1);
    expect([tb.start_ts, tb.stop_ts, tb.end_reason]).toEqual([ta.start_ts, ta.stop_ts, ta.end_reason]);
  });

  it('opens a trip on startup and completes it on shutdown, fed in batches', async () => {
    const id = await device();
    const frames = drive(0, 600, 36);
    await feed(t, id, frames, 7);
    const [trip, ...rest] = await tripsOf(t, id);
    expect(rest).toHaveLength(0);
    expect(trip.start_reason).toBe('startup');
    expect(trip.end_reason).toBe('shutdown');
    expect(new Date(trip.start_ts)).toEqual(at(0));
    expect(new Date(trip.stop_ts)).toEqual(at(600));
    const stats = tripStats(sumsOf(trip));
    expect(stats.messageCount).toBe(frames.length);
    // 36 km/h = 10 m/s from 5 s to 595 s, plus a 5 s ramp (mean 5 m/s) at each end: 5,900 + 2 × 25 = 5,950 m.
    expect(stats.distanceByVSS).toBeCloseTo(5950, 0);
    expect(stats.distanceByGPS).toBeGreaterThan(5950 * 0.995);
    expect(stats.distanceByGPS).toBeLessThan(5950 * 1.005);
    expect(stats.duration).toBe(600_000);
    expect(stats.averageMovingSpeed).toBe(36);
    expect(stats.stdDevMovingSpeed).toBe(0);
    expect(stats.stopCount).toBe(0);
    expect(stats.substantial).toBe(true);
    expect(stats.comprehensiveLocations).toBe(true);
    expect(stats.maxSpeed).toBe(36);
    // a straight drive north simplifies to its two ends (5-decimal polyline precision)
    const line = polyline.decode(trip.preview);
    expect(line).toHaveLength(2);
    for (const [p, f] of [[line[0], frames[0]], [line[1], frames.at(-1)!]] as const) {
      expect(p[0]).toBeCloseTo(f.lat!, 4);
      expect(p[1]).toBeCloseTo(LON, 4);
    }
    expect(await tripEvents(t, id)).toEqual(['trip-started@0', 'trip-completed@600', 'trip-stopped@600']);
    const cards = await t.db.knex('report_cards').where({ trip_id: trip.id });
    expect(cards).toHaveLength(1);
  });

  it('gives the same trip fed in one batch as in many', async () => {
    const [a, b] = [await device(), await device()];
    const frames = drive(0, 300, 50);
    await feed(t, a, frames, 1);
    await feed(t, b, frames, 1000);
    const [ta, tb] = [(await tripsOf(t, a))[0], (await tripsOf(t, b))[0]];
    expect(tripStats(sumsOf(ta))).toEqual(tripStats(sumsOf(tb)));
    expect(ta.preview).toBe(tb.preview);
  });

  it('advances an open trip the same through the continuation statement as through full segmentation', async () => {
    // With and without ignition: varying speed with a stop shorter than the stationary period, hard events from
    // the accelerometer and from the speed change, fuel, a sample without location, one without speed (the next
    // speed sample's previous one is two rows back), and a closing stillness.
    const speeds = [0, 20, 45, 60, 60, 30, 2, 0, 0, 25, 50, 80, 85, 40, 40, 70, 0, 0, 0];
    const base = (ignition: boolean) => speeds.flatMap((kmh, i) => {
      const f = { s: i * 10, speed: kmh, lat: LAT + i * 0.0012, lon: LON, data: { engineFuelRate: kmh / 10, calculatedLoadValue: 20 + i,
        ...(i === 12 ? { accel: { minX: -5, maxX: 0.2 } } : {}) } } as F;
      if (i === 8) delete f.lat;
      if (i === 14) delete f.speed;
      return [{ ...f, kind: ignition && i === 0 ? 'startup' as const : 'telemetry' as const }];
    });
    const tail = (ignition: boolean) => [...base(ignition), ...(ignition ? [{ s: 190, kind: 'shutdown' as const, speed: 0, lat: LAT + 0.03, lon: LON }]
      : Array.from({ length: 25 }, (_, k) => ({ s: 190 + k * 10, speed: 0, lat: LAT + 0.03, lon: LON })))];
    for (const ignition of [true, false]) {
      const frames = tail(ignition);
      const whole = await device();
      await feed(t, whole, frames, 1000);
      const rowsOf = async (id: string) => (await tripsOf(t, id)).map((r: any) => ({
        stats: tripStats(sumsOf(r)), shape: [r.start_reason, r.end_reason, new Date(r.start_ts).getTime(), r.stop_ts && new Date(r.stop_ts).getTime(), r.preview, r.last_stopped],
      }));
      const expected = await rowsOf(whole);
      expect(expected, `ignition ${ignition}`).toHaveLength(1);
      for (const size of [1, 3, 7]) {
        const id = await device();
        const label = `ignition ${ignition}, batches of ${size}`;
        // every batch runs CONTINUE or SEGMENT; CONTINUE must have advanced the trip in most of them
        const { sql } = await recordStatements(t.db.knex, () => feed(t, id, frames, size), /upserted AS \(/);
        const batches = Math.ceil(frames.length / size);
        // the opening batch always segments (no open trip yet)
        expect(sql.length, label).toBeGreaterThanOrEqual(1);
        expect(sql.length, label).toBeLessThanOrEqual(size === 1 ? batches - 5 : batches - 1);
        const got = await rowsOf(id);
        expect(got.map((g) => g.shape), label).toEqual(expected.map((e) => e.shape));
        for (const [k, v] of Object.entries(expected[0].stats)) {
          if (typeof v === 'number') expect((got[0].stats as any)[k], `${k}, ${label}`).toBeCloseTo(v, 6);
          else expect((got[0].stats as any)[k], `${k}, ${label}`).toEqual(v);
        }
        expect(await tripEvents(t, id), label).toEqual(await tripEvents(t, whole));
      }
    }
  });

  it('makes exactly one trip for a drive without ignition frames, ended after the stationary period', async () => {
    const id = await device();
    const moving = drive(0, 600, 40, { ignition: false });
    const parked = Array.from({ length: 50 }, (_, i) => ({ s: 605 + i * 5, speed: 0, lat: moving.at(-1)!.lat, lon: moving.at(-1)!.lon }));
    await feed(t, id, [...moving, ...parked], 9);
    const trips = await tripsOf(t, id);
    expect(trips).toHaveLength(1);
    expect(trips[0].start_reason).toBe('motion');
    expect(trips[0].end_reason).toBe('stationary');
    expect(new Date(trips[0].start_ts)).toEqual(at(5));
    expect(new Date(trips[0].stop_ts)).toEqual(at(600));
    expect(await tripEvents(t, id)).toEqual(['trip-started@5', 'trip-completed@600', 'trip-stopped@600']);
  });

  it('opens nothing for parked frames (no startup, no motion) after a completed trip, and leaves that trip as it was', async () => {
    const id = await device();
    const frames = drive(0, 300, 40);
    await feed(t, id, frames, 10);
    const [before] = await tripsOf(t, id);
    const parked = Array.from({ length: 12 }, (_, i) => ({ s: 320 + i * 5, speed: i % 2 ? 0 : 4.9, lat: frames.at(-1)!.lat, lon: LON }));
    await feed(t, id, parked, 4);
    expect(await tripsOf(t, id)).toEqual([before]);
    await batch(t, { [id]: [{ s: 400, speed: 5, lat: frames.at(-1)!.lat, lon: LON }] }); // 5 km/h: motion
    expect((await tripsOf(t, id)).map((x: any) => x.start_reason)).toEqual(['startup', 'motion']);
  });

  it('ends a trip at a reporting gap and starts another after it', async () => {
    const id = await device();
    const first = drive(0, 300, 40).slice(0, -1); // no shutdown
    await feed(t, id, [...first, ...drive(3000, 300, 40)], 10);
    const trips = await tripsOf(t, id);
    expect(trips.map((x: any) => [x.start_reason, x.end_reason])).toEqual([['startup', 'gap'], ['startup', 'shutdown']]);
    expect(new Date(trips[0].stop_ts)).toEqual(at(295));
  });

  it('keeps one trip across a GPS gap (messages without location)', async () => {
    const id = await device();
    const frames = drive(0, 600, 40).map((f) => (f.s > 200 && f.s < 400 ? { ...f, lat: undefined } : f));
    await feed(t, id, frames, 10);
    const trips = await tripsOf(t, id);
    expect(trips).toHaveLength(1);
    expect(tripStats(sumsOf(trips[0])).comprehensiveLocations).toBe(false);
  });

  it('changes nothing when frames are re-sent, and re-segments for late frames without repeating events', async () => {
    const id = await device();
    const frames = drive(0, 600, 40);
    const missing = frames.filter((f) => f.s >= 200 && f.s < 260);
    await feed(t, id, frames.filter((f) => !missing.includes(f)), 10);
    const before = (await tripsOf(t, id))[0];
    const eventsBefore = await tripEvents(t, id);
    await batch(t, { [id]: missing }); // late: inside the completed trip
    const after = await tripsOf(t, id);
    expect(after).toHaveLength(1);
    expect(after[0].id).toBe(before.id);
    expect(after[0].message_count).toBe(frames.length);
    expect(await tripEvents(t, id)).toEqual(eventsBefore);
    const fresh = await device();
    await feed(t, fresh, frames, 10);
    expect(tripStats(sumsOf(after[0]))).toEqual(tripStats(sumsOf((await tripsOf(t, fresh))[0])));
  });

  it('joins two trips split by a gap when late frames fill it', async () => {
    const id = await device();
    const frames = drive(0, 2400, 40, { every: 10 });
    const hole = frames.filter((f) => f.s > 500 && f.s < 1500);
    await feed(t, id, frames.filter((f) => !hole.includes(f)), 20);
    expect((await tripsOf(t, id)).map((x: any) => x.end_reason)).toEqual(['gap', 'shutdown']);
    await batch(t, { [id]: hole });
    const trips = await tripsOf(t, id);
    expect(trips.map((x: any) => x.end_reason)).toEqual(['shutdown']);
    expect(await tripEvents(t, id)).toEqual(['trip-started@0', 'trip-completed@2400', 'trip-stopped@2400']);
  });

  it('counts hard brakes and accelerations from the accelerometer or the speed change, consecutive samples as one', async () => {
    const id = await device();
    const frames = drive(0, 300, 50); // ramps of 50 km/h in 5 s = 2.8 m/s²: not hard
    const accel = (minX: number, maxX: number) => ({ accel: { minX, maxX, minY: 0, maxY: 0, minZ: 9.8, maxZ: 9.8 } });
    frames[10].data = accel(-5.5, 0); frames[11].data = accel(-4, 0); // one brake over two samples
    frames[20].data = accel(-2, 0); // not hard
    frames[30].data = accel(0, 3.2); // a hard acceleration
    // speed change: 50 → 10 km/h in 2 s = -5.6 m/s² (a hard brake without accelerometer data)
    frames.splice(41, 0, { ...frames[40], s: frames[40].s + 2, speed: 10 });
    await feed(t, id, frames, 6);
    const stats = tripStats(sumsOf((await tripsOf(t, id))[0]));
    expect(stats.hardBrakeCount).toBe(2);
    // back from 10 to 50 km/h in 3 s = 3.7 m/s²: a second hard acceleration
    expect(stats.hardAccelCount).toBe(2);
  });

  it('closes the open trip of a device that fell silent, with end reason silent and its events', async () => {
    const id = await device();
    await feed(t, id, drive(0, 300, 40).slice(0, 30), 10);
    expect((await tripsOf(t, id))[0].stop_ts).toBeNull();
    const events = await t.db.knex.transaction((trx) => sweepSilentTrips(trx, 0));
    const [trip] = await tripsOf(t, id);
    expect(trip.end_reason).toBe('silent');
    expect(new Date(trip.stop_ts)).toEqual(at(145));
    expect(events.filter((e) => e.objectId === trip.id).map((e) => e.eventType)).toEqual(['trip-stopped', 'trip-completed']);
    expect(await t.db.knex('report_cards').where({ trip_id: trip.id })).toHaveLength(1);
  });

  it('continues the open trip, without re-deriving it, for a frame at the millisecond of the newest stored one', async () => {
    const id = await device();
    const frames = drive(0, 300, 40);
    await feed(t, id, frames.slice(0, 20), 10);
    let statements = 0;
    await batch(t, { [id]: [{ ...frames[19], data: { rpm: 1500 } }, ...frames.slice(20, 25)] }, () => { statements++; });
    expect(statements).toBe(1); // segment only: no re-derivation, no event diff
    await feed(t, id, frames.slice(25), 10);
    const trips = await tripsOf(t, id);
    expect(trips).toHaveLength(1);
    expect(trips[0].message_count).toBe(frames.length + 1);
    expect(await tripEvents(t, id)).toEqual(['trip-started@0', 'trip-completed@300', 'trip-stopped@300']);
  });
});
