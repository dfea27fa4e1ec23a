import { describe, expect, it } from 'vitest';
import { fromMeters, halfWidth, isUnit, toMeters } from '../../db/distance/model.js';
import { firstTarget } from '../../db/distance/odometers.repository.js';

describe('distance units and model', () => {
  it('converts km and mi (international mile, 1 609.344 m) to meters and back', () => {
    expect(toMeters(15000, 'km')).toBe(15_000_000);
    expect(toMeters(10, 'mi')).toBeCloseTo(16_093.44, 9);
    expect(toMeters(42, 'm')).toBe(42);
    expect(fromMeters(16_093.44, 'mi')).toBeCloseTo(10, 12);
    expect(fromMeters(1_234, 'km')).toBeCloseTo(1.234, 12);
    expect(['m', 'km', 'mi'].map(isUnit)).toEqual([true, true, true]);
    expect(['M', 'KM', 'ft', 'yd', '', 'toString', undefined].map(isUnit)).toEqual([false, false, false, false, false, false, false]);
  });

  it('widens the interval by 1% of GPS meters and 3% of speed-integrated meters, plus 50 m for a reading', () => {
    expect(halfWidth(0, 0, true)).toBe(50);
    expect(halfWidth(10_000, 0, true)).toBeCloseTo(150, 9);
    expect(halfWidth(10_000, 1_000, true)).toBeCloseTo(180, 9);
    expect(halfWidth(10_000, 1_000, false)).toBeCloseTo(130, 9);
  });

  it('places a new trigger\'s first target by type', () => {
    const now = { travelledM: 7_000, estimateM: 1_000_123 };
    expect(firstTarget('specific', 1_200_000, now)).toBe(1_200_000);
    expect(firstTarget('from_now', 500, now)).toBe(7_500);
    expect(firstTarget('milestone', 250, now)).toBe(1_000_250);
    expect(firstTarget('milestone', 250, { travelledM: 0, estimateM: 1_000_250 })).toBe(1_000_500); // a multiple reached already is behind
  });
});
