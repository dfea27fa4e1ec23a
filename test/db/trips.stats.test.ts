import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { tripStats } from '../../db/trips/formulas.js';
import { sumsOf } from '../../db/trips/segment.js';
import { feed, north, tripsOf, type F } from './trips.fixtures.js';

let t: TestApp;
beforeAll(async () => { t = await buildTestApp(); });
afterAll(async () => { await t?.close(); });

/**
 * Eight frames 10 s apart, positions following the speed (trapezoids), hand-computed:
 * VSS = 50 + 100 + 50 + 50 + 230.556 + 361.111 + 180.556 = 1,022.22 m;
 * fuel = 3.6 L/h × 10 s × 2 + 10 g/s × 10 s of air / 14.7 / 745 g/L = 0.02 + 0.0091312 = 0.0291312 L;
 * load = (20 + 40 + 60) / 3 = 40 %; moving speeds 36, 36, 36, 130, 130: mean 73.6, std √2120.64 = 46.0504;
 * stops: 36 → 0 at 30 s (the final halt at 70 s is not a stop); 130 → 0 in 10 s = −3.61 m/s²: one hard brake;
 * 20 s above 120 km/h; score = (2 × 1 + 20/60) / (16 km / 10 km) = 1.46 points per 10 km (the trip is shorter than the
 * 16 km floor): B.
 */
const SPEEDS = [0, 36, 36, 0, 36, 130, 130, 0];
const DATA: Record<number, Record<string, unknown>> = {
  0: { calculatedLoadValue: 20, engineFuelRate: 3.6 }, 1: { calculatedLoadValue: 40, engineFuelRate: 3.6 },
  2: { calculatedLoadValue: 60, massAirFlow: 10 }, 3: { engineFuelRate: 3.6 },
};

function frames(): F[] {
  let m = 0;
  return SPEEDS.map((speed, i) => {
    if (i) m += ((SPEEDS[i - 1] + speed) / 2 / 3.6) * 10;
    return { s: i * 10, kind: i === 0 ? 'startup' : i === SPEEDS.length - 1 ? 'shutdown' : 'telemetry', speed, lat: north(m), data: DATA[i] };
  });
}

describe('trip statistics from stored frames (hand-computed)', () => {
  it('integrates distance, fuel and speeding, averages load and moving speed, counts stops and hard brakes, grades', async () => {
    const app = await t.make.application();
    const { id } = await t.make.device(app.principal);
    await feed(t, id, frames(), 3);
    const [trip] = await tripsOf(t, id);
    const s = tripStats(sumsOf(trip));
    expect(s.distanceByVSS).toBeCloseTo(1022.22, 1);
    expect(s.distanceByGPS).toBeGreaterThan(1022.22 * 0.995);
    expect(s.distanceByGPS).toBeLessThan(1022.22 * 1.005);
    expect(s.fuelConsumed).toBeCloseTo(0.0291312, 5); // reported to 5 decimals
    expect(s.averageLoad).toBe(40);
    expect(s.averageMovingSpeed).toBe(73.6);
    expect(s.stdDevMovingSpeed).toBeCloseTo(46.0504, 3);
    expect(s.maxSpeed).toBe(130);
    expect(s.stopCount).toBe(1);
    expect(s.hardBrakeCount).toBe(1);
    expect(s.hardAccelCount).toBe(0);
    expect(s.duration).toBe(70_000);
    expect(s.averageSpeed).toBeCloseTo((s.distance / 70) * 3.6, 3);
    expect(s.fuelEconomy).toBeCloseTo((s.distance / 1609.344) / (0.0291312 / 3.785411784), 2);
    expect(Number(trip.speeding_ms)).toBe(20_000);
    const [card] = await t.db.knex('report_cards').where({ trip_id: trip.id });
    expect(card.grade).toBe('B');
    expect(card.score).toBeCloseTo((2 + 20 / 60) / 1.6, 6);
  });

  it('grades one hard brake on a steady 2 km drive B, not F: the points are spread over at least 16 km', async () => {
    const app = await t.make.application();
    const { id } = await t.make.device(app.principal);
    // a sample every 5 s, 10 km/h faster (or slower) each (0.56 m/s²) up to 60 km/h, held for 2 km, back down to 0; one
    // sample of it braking hard (accelerometer −5 m/s²) without slowing
    const speeds = [0, 10, 20, 30, 40, 50, ...Array(19).fill(60), 50, 40, 30, 20, 10, 0];
    let m = 0;
    const frames: F[] = speeds.map((speed, i) => {
      if (i) m += ((speeds[i - 1] + speed) / 2 / 3.6) * 5;
      const kind = i === 0 ? 'startup' : i === speeds.length - 1 ? 'shutdown' : 'telemetry';
      const data = i === 15 ? { accel: { minX: -5, maxX: 0.2, minY: -0.3, maxY: 0.3, minZ: 9.6, maxZ: 10 } } : undefined;
      return { s: i * 5, kind, speed, lat: north(m), data };
    });
    await feed(t, id, frames, 5);
    const [trip] = await tripsOf(t, id);
    const s = tripStats(sumsOf(trip));
    expect(s.hardBrakeCount).toBe(1);
    expect(s.distance).toBeGreaterThan(1900);
    expect(s.distance).toBeLessThan(2100);
    const [card] = await t.db.knex('report_cards').where({ trip_id: trip.id });
    // 2 points × 10 km / 16 km = 1.25 (over the trip's own 2 km it was 10 points per 10 km: an F)
    expect(card.score).toBe(1.25);
    expect(card.grade).toBe('B');
  });
});
