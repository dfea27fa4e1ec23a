import { describe, expect, it } from 'vitest';
import {
  fuelConsumed, fuelEconomyMpg, fuelFromAir, gradeFor, isComprehensive, isSubstantial, overallGrade, reportCardScore, stdDev, tripStats,
  type TripSums,
} from '../../db/trips/formulas.js';

const sums = (o: Partial<TripSums> = {}): TripSums => ({
  startMs: 0, endMs: 600_000, messageCount: 100, locationCount: 100, gpsM: 10_000, vssM: 9_800, speedN: 100, maxSpeed: 90,
  movingN: 4, movingSum: 200, movingSumSq: 10_400, loadN: 2, loadSum: 70, fuelRateL: 0, airG: 0, fuelN: 0, diesel: false,
  hardAccel: 1, hardBrake: 2, stopCount: 3, lastStopped: true, speedingMs: 0, ...o,
});

describe('trip formulas (hand-computed)', () => {
  it('fuel from air: gasoline 14.7:1 at 745 g/L, diesel 14.5:1 at 832 g/L', () => {
    expect(fuelFromAir(14.7 * 745, false)).toBeCloseTo(1, 12);
    expect(fuelFromAir(14.5 * 832, true)).toBeCloseTo(1, 12);
    expect(fuelConsumed({ fuelRateL: 0.5, airG: 14.7 * 745, fuelN: 3, diesel: false })).toBeCloseTo(1.5, 12);
    expect(fuelConsumed({ fuelRateL: 0, airG: 0, fuelN: 0, diesel: false })).toBeNull();
  });

  it('fuel economy in US mpg is distance over fuel', () => {
    // 1 mile on 1 US gallon.
    expect(fuelEconomyMpg(1609.344, 3.785411784)).toBeCloseTo(1, 12);
    // 10 km on 1 L = 23.5215 mpg.
    expect(fuelEconomyMpg(10_000, 1)).toBeCloseTo(23.5215, 4);
    expect(fuelEconomyMpg(10_000, 0)).toBeNull();
  });

  it('standard deviation from n, sum and sum of squares', () => {
    // 40, 50, 50, 60: mean 50, variance (100 + 0 + 0 + 100) / 4 = 50.
    expect(stdDev(4, 200, 1600 + 2500 + 2500 + 3600)).toBeCloseTo(Math.sqrt(50), 12);
    expect(stdDev(0, 0, 0)).toBeNull();
  });

  it('statistics in the API\'s units: m, ms, km/h, %, L, mpg', () => {
    const s = tripStats(sums({ movingSumSq: 10_200, fuelRateL: 1, fuelN: 10 }));
    expect(s.distance).toBe(10_000); // GPS covers the trip
    expect(s.duration).toBe(600_000);
    expect(s.averageSpeed).toBe(60); // 10 km in 10 min
    expect(s.averageMovingSpeed).toBe(50);
    expect(s.stdDevMovingSpeed).toBeCloseTo(Math.sqrt(50), 3);
    expect(s.averageLoad).toBe(35);
    expect(s.fuelConsumed).toBe(1);
    expect(s.fuelEconomy).toBeCloseTo(23.5215, 4);
    expect(s.stopCount).toBe(2); // the final halt is not a stop
    expect(s.hardBrakeCount).toBe(2);
    expect(s.hardAccelCount).toBe(1);
    expect(tripStats(sums({ locationCount: 10 })).distance).toBe(9_800); // thin GPS: the speed sensor's distance
  });

  it('substantial and comprehensive thresholds', () => {
    expect(isSubstantial({ messageCount: 5, startMs: 0, endMs: 60_000 })).toBe(true);
    expect(isSubstantial({ messageCount: 4, startMs: 0, endMs: 60_000 })).toBe(false);
    expect(isSubstantial({ messageCount: 5, startMs: 0, endMs: 59_999 })).toBe(false);
    expect(isComprehensive({ messageCount: 10, locationCount: 8 })).toBe(true);
    expect(isComprehensive({ messageCount: 10, locationCount: 7 })).toBe(false);
  });
});

describe('report card grades', () => {
  it('grades at each band edge (points per 10 km)', () => {
    expect(gradeFor(0)).toBe('A');
    expect(gradeFor(1)).toBe('A');
    expect(gradeFor(1.0001)).toBe('B');
    expect(gradeFor(2)).toBe('B');
    expect(gradeFor(2.0001)).toBe('C');
    expect(gradeFor(4)).toBe('C');
    expect(gradeFor(4.0001)).toBe('D');
    expect(gradeFor(8)).toBe('D');
    expect(gradeFor(8.0001)).toBe('F');
    expect(gradeFor(null)).toBe('I');
  });

  it('scores 2 per hard brake, 1 per hard acceleration, 1 per minute above 120 km/h, per 10 km', () => {
    const base = { distance: 20_000, substantial: true };
    expect(reportCardScore({ ...base, hardBrakeCount: 1, hardAccelCount: 1 }, 60_000)).toBe(2); // (2 + 1 + 1) / 2
    expect(reportCardScore({ ...base, distance: 999, hardBrakeCount: 0, hardAccelCount: 0 }, 0)).toBeNull();
    expect(reportCardScore({ ...base, substantial: false, hardBrakeCount: 0, hardAccelCount: 0 }, 0)).toBeNull();
  });

  it('spreads the points over at least 16 km: one event on a short drive is weak evidence', () => {
    const base = { substantial: true, hardAccelCount: 0 };
    // one hard brake (2 points) on a 2 km drive: 2 × 10 / 16 = 1.25, a B (over its own 2 km: 10, an F)
    expect(reportCardScore({ ...base, distance: 2_000, hardBrakeCount: 1 }, 0)).toBe(1.25);
    expect(gradeFor(reportCardScore({ ...base, distance: 2_000, hardBrakeCount: 1 }, 0))).toBe('B');
    // one hard acceleration on 4.5 km: 1 × 10 / 16 = 0.625, an A (over its own 4.5 km: 2.22, a C)
    expect(gradeFor(reportCardScore({ ...base, distance: 4_500, hardBrakeCount: 0, hardAccelCount: 1 }, 0))).toBe('A');
    // the same on every distance up to the floor; past it, the trip's own distance
    expect(reportCardScore({ ...base, distance: 1_000, hardBrakeCount: 1 }, 0)).toBe(1.25);
    expect(reportCardScore({ ...base, distance: 16_000, hardBrakeCount: 1 }, 0)).toBe(1.25);
    expect(reportCardScore({ ...base, distance: 40_000, hardBrakeCount: 1 }, 0)).toBe(0.5);
    // two hard brakes on a short drive: 2.5, a C; four: 5, a D
    expect(gradeFor(reportCardScore({ ...base, distance: 2_000, hardBrakeCount: 2 }, 0))).toBe('C');
    expect(gradeFor(reportCardScore({ ...base, distance: 2_000, hardBrakeCount: 4 }, 0))).toBe('D');
  });

  it('overall grade is the rounded mean of the graded trips', () => {
    expect(overallGrade({ A: 1, B: 1, C: 1, I: 1 })).toBe('B');
    expect(overallGrade({ A: 2, B: 1 })).toBe('A');
    expect(overallGrade({ I: 1 })).toBe('I');
  });
});
