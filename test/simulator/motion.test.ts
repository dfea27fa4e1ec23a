import { describe, expect, it } from 'vitest';
import { haversineM } from '../../simulator/geo.js';
import { planDrive, estimateDurationMs } from '../../simulator/motion.js';
import { loadStoredRoutes, decodeRoute } from '../../simulator/route.js';
import { MOTION } from '../../simulator/speed-profile.js';
import { HARD } from '../../db/trips/formulas.js';
import { syntheticRoute } from './synthetic-route.js';

const routes = await loadStoredRoutes();

function gpsDistance(positions: [number, number][]): number {
  let d = 0;
  for (let i = 1; i < positions.length; i++) d += haversineM(positions[i - 1], positions[i]);
  return d;
}

describe('planDrive on the stored routes', () => {
  it.each(routes.map((r) => [r.name, r] as const))('%s: reproduces distanceByGPS within 2% and duration within 5%', (_name, route) => {
    const plan = planDrive(route);
    const distance = gpsDistance(plan.samples.map((s) => s.position));
    expect(Math.abs(distance / route.distanceByGPS - 1)).toBeLessThan(0.02);
    expect(Math.abs(plan.durationMs / route.duration - 1)).toBeLessThan(0.05);
    expect(plan.feasible).toBe(true);
    // The solver itself aims at 1%.
    expect(Math.abs(plan.durationError)).toBeLessThan(0.01);
  });

  it.each(routes.map((r) => [r.name, r] as const))('%s: starts and ends standing, never above the clamp, ends at the route length', (_name, route) => {
    const plan = planDrive(route);
    const [first, last] = [plan.samples[0], plan.samples.at(-1)!];
    expect(first.speed).toBe(0);
    expect(first.distance).toBe(0);
    expect(last.speed).toBe(0);
    expect(last.distance).toBeCloseTo(decodeRoute(route).lengthM, 6);
    expect(last.t).toBe(plan.durationMs);
    for (const s of plan.samples) {
      expect(s.speed).toBeLessThanOrEqual(MOTION.maxKmh + 1e-9);
      expect(s.accelMin).toBeGreaterThanOrEqual(-MOTION.brake - 1e-9);
      expect(s.accelMax).toBeLessThanOrEqual(MOTION.accel + 1e-9);
    }
  });

  it('samples every intervalMs, distance never decreasing', () => {
    const plan = planDrive(routes[0], { intervalMs: 2500 });
    plan.samples.slice(1).forEach((s, i) => {
      expect(s.t - plan.samples[i].t).toBeGreaterThan(0);
      expect(s.t - plan.samples[i].t).toBeLessThanOrEqual(2500);
      expect(s.distance).toBeGreaterThanOrEqual(plan.samples[i].distance);
    });
  });

  it('refuses an interval above 5000 ms', () => {
    expect(() => planDrive(routes[0], { intervalMs: 6000 })).toThrow(/intervalMs must be 100\.\.5000/);
  });
});

describe('speed profile', () => {
  // 600 m east, a right-angle turn, 600 m north; 120 s leaves a cruise of ~40–50 km/h.
  const lRoute = syntheticRoute([[600, 0], [0, 600]], 120_000);

  it('takes a sharp turn slower than the straights (turn ≤ 25 km/h, straights ≥ 35 km/h)', () => {
    const plan = planDrive(lRoute, { intervalMs: 500, traffic: false });
    const near = (d: number) => plan.samples.reduce((a, b) => (Math.abs(b.distance - d) < Math.abs(a.distance - d) ? b : a));
    const turn = near(600);
    expect(turn.speed).toBeLessThanOrEqual(25);
    expect(turn.speed).toBeGreaterThanOrEqual(MOTION.minTurnKmh - 1);
    expect(near(300).speed).toBeGreaterThanOrEqual(35);
    expect(near(900).speed).toBeGreaterThanOrEqual(35);
  });

  it('accelerates at ~2 m/s² and brakes at ~2.5 m/s²', () => {
    const plan = planDrive(lRoute);
    expect(plan.samples[1].speed).toBeCloseTo(2 * 3.6, 1); // 1 s after the start
    expect(Math.min(...plan.samples.map((s) => s.accelMin))).toBeCloseTo(-2.5, 6);
    expect(Math.max(...plan.samples.map((s) => s.accelMax))).toBeCloseTo(2, 6);
  });

  it('stands still at a route stop for its seconds (±1 sample)', () => {
    const route = syntheticRoute([[1000, 0]], 150_000, { stops: [{ at: 500, seconds: 30 }] });
    const plan = planDrive(route);
    const standing = plan.samples.filter((s) => s.speed === 0 && Math.abs(s.distance - 500) < 1);
    expect(standing.length).toBeGreaterThanOrEqual(29);
    expect(standing.length).toBeLessThanOrEqual(31);
    expect(Math.abs(plan.durationError)).toBeLessThan(0.01);
  });

  it("follows the route's profile shape: the 60 km/h half is driven twice as fast as the 30 km/h half", () => {
    const profile = [{ at: 0, speed: 30 }, { at: 1000, speed: 30 }, { at: 1001, speed: 60 }];
    const route = syntheticRoute([[2000, 0]], 200_000, { profile });
    const plan = planDrive(route, { traffic: false });
    const speedAt = (d: number) => plan.samples.find((s) => s.distance >= d)!.speed;
    expect(speedAt(1500) / speedAt(500)).toBeCloseTo(2, 1);
    expect(Math.abs(plan.durationError)).toBeLessThan(0.01);
  });

  it('reports an impossible recorded duration and keeps the closest plan', () => {
    const route = syntheticRoute([[2000, 0]], 20_000); // 2 km in 20 s needs 360 km/h
    const plan = planDrive(route);
    expect(plan.feasible).toBe(false);
    expect(plan.note).toMatch(/out of reach within 5\.\.130 km\/h/);
    expect(plan.maxSpeed).toBeCloseTo(130, 6);
    expect(plan.durationMs).toBeGreaterThan(55_000); // 2 km at 130 km/h plus ramps
  });

  it('estimates an urban duration when a route has none: 2 km straight ≈ 3 min at 40 km/h', () => {
    const ms = estimateDurationMs(syntheticRoute([[2000, 0]], 1));
    expect(ms / 1000).toBeGreaterThan(180);
    expect(ms / 1000).toBeLessThan(195);
  });
});

describe('traffic', () => {
  const route = routes.find((r) => r.name === 'DFW - Downtown Route 1')!;
  const histogram = (plan: ReturnType<typeof planDrive>) => {
    const counts = new Map<number, number>();
    for (const s of plan.samples) counts.set(Math.round(s.speed), (counts.get(Math.round(s.speed)) ?? 0) + 1);
    return counts;
  };

  it.each([1, 2, 3, 42, 1234])('seed %i: no km/h value holds more than 20% of the samples, and the car stops at junctions', (seed) => {
    const plan = planDrive(route, { seed });
    const most = Math.max(...histogram(plan).values());
    expect(most / plan.samples.length).toBeLessThanOrEqual(0.2);
    expect(plan.junctionStopsAtM.length).toBeGreaterThanOrEqual(2);
    // Standing in the middle of the drive, not only at its ends.
    const standing = plan.samples.filter((s) => s.speed === 0 && s.distance > 50 && s.distance < plan.lengthM - 50);
    expect(standing.length).toBeGreaterThanOrEqual(5);
    expect(Math.abs(plan.durationError)).toBeLessThan(0.01);
  });

  it('keeps acceleration and braking below the hard-event thresholds of the trips', () => {
    for (const seed of [1, 2, 3, 42, 1234]) {
      const plan = planDrive(route, { seed });
      for (let i = 1; i < plan.samples.length; i++) {
        const [a, b] = [plan.samples[i - 1], plan.samples[i]];
        const dvdt = (b.speed - a.speed) / 3.6 / ((b.t - a.t) / 1000);
        expect(dvdt).toBeGreaterThan(-HARD.brakeMs2);
        expect(dvdt).toBeLessThan(HARD.accelMs2);
        expect(b.accelMin).toBeGreaterThan(-HARD.brakeMs2);
        expect(b.accelMax).toBeLessThan(HARD.accelMs2);
      }
    }
  });

  it('is the same drive for the same seed, another for another seed', () => {
    expect(planDrive(route, { seed: 7 }).samples).toEqual(planDrive(route, { seed: 7 }).samples);
    expect(planDrive(route, { seed: 8 }).samples.map((s) => s.speed)).not.toEqual(planDrive(route, { seed: 7 }).samples.map((s) => s.speed));
  });

  it('drives long straight stretches faster than short ones between turns', () => {
    // 800 m straight, then four 90 m legs zigzagging, then 800 m straight again.
    const zigzag = syntheticRoute([[800, 0], [0, 90], [90, 0], [0, -90], [90, 0], [800, 0]], 240_000);
    const plan = planDrive(zigzag, { seed: 5, intervalMs: 500 });
    const mean = (from: number, to: number) => {
      const inside = plan.samples.filter((s) => s.distance >= from && s.distance <= to && s.speed > 0);
      return inside.reduce((a, s) => a + s.speed, 0) / inside.length;
    };
    expect(mean(200, 600)).toBeGreaterThan(mean(800, 1160) * 1.2);
  });

  it('follows a route that lists its own stops without adding junction stops', () => {
    const withStops = routes.find((r) => r.stops?.length)!;
    expect(planDrive(withStops, { seed: 3 }).junctionStopsAtM).toEqual([]);
  });
});

describe('scenario motion', () => {
  const route = routes.find((r) => r.name === 'DFW - Downtown Route 1')!;

  it('hard-brake: one braking at ≤ −4 m/s² between 50% and 75% of the route', () => {
    const plan = planDrive(route, { scenarios: ['hard-brake'] });
    const hard = plan.samples.filter((s) => s.accelMin <= -4);
    expect(hard.length).toBeGreaterThan(0);
    expect(hard.at(-1)!.t - hard[0].t).toBeLessThanOrEqual(5000);
    expect(plan.events.hardBrakeAtM! / plan.lengthM).toBeGreaterThanOrEqual(0.49);
    expect(plan.events.hardBrakeAtM! / plan.lengthM).toBeLessThanOrEqual(0.76);
    expect(Math.abs(plan.durationMs / route.duration - 1)).toBeLessThan(0.05);
  });

  it('collision: the car stands where it hit from the next sample on, then the drive ends', () => {
    const plan = planDrive(route, { scenarios: ['collision'], seed: 9 });
    const at = plan.events.collisionAt!;
    const hit = plan.samples[at];
    expect(hit.speed).toBeGreaterThanOrEqual(15);
    expect(hit.t / planDrive(route, { seed: 9 }).durationMs).toBeGreaterThanOrEqual(0.5);
    const after = plan.samples.slice(at + 1);
    expect(after.length).toBeGreaterThanOrEqual(30);
    for (const s of after) {
      expect(s.speed).toBe(0);
      expect(s.distance).toBe(hit.distance);
    }
    expect(plan.durationMs).toBe(plan.samples.at(-1)!.t);
    expect(plan.samples.at(-1)!.distance).toBeLessThan(plan.lengthM);
  });

  it('hard-accel: one pull-away at ≥ 3.5 m/s²', () => {
    const plan = planDrive(route, { scenarios: ['hard-accel'] });
    const hard = plan.samples.filter((s) => s.accelMax >= 3.5);
    expect(hard.length).toBeGreaterThan(0);
    expect(hard.at(-1)!.t - hard[0].t).toBeLessThanOrEqual(5000);
    expect(Math.abs(plan.durationMs / route.duration - 1)).toBeLessThan(0.05);
  });
});
