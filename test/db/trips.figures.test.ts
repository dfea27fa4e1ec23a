import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { tripStats } from '../../db/trips/formulas.js';
import { sumsOf, type TripSumsRow } from '../../db/trips/segment.js';
import { LON, batch, feed, north, tripsOf, newDevice, rounded, type F } from './trips.fixtures.js';

// Trip figures a fleet manager would believe: no wheel-speed integral across a reporting gap, and an impact counted
// once (as a collision), whatever order the frames arrive in.
let t: TestApp;
let small: TestApp;
beforeAll(async () => {
  t = await buildTestApp();
  // a bound of 40 messages: a late frame into a longer trip is spliced into it (db/trips/segment.ts SPLICE)
  small = await buildTestApp({ lateRecomputeMaxMessages: 40 });
});
afterAll(async () => { await t?.close(); await small?.close(); });

const device = newDevice;
const statsOf = async (a: TestApp, id: string) => (await tripsOf(a, id)).map((r: TripSumsRow) => tripStats(sumsOf(r)));

/**
 * A drive north with a reporting gap: startup at 0, 60 km/h every 5 s (positions following the speed) up to 300 s,
 * nothing for 219 s, then a sample at 0 km/h 798 m further on (the GPS distance of the gap), and 60 more samples at rest
 * up to the shutdown.
 */
function gapDrive(): F[] {
  const frames: F[] = [];
  for (let s = 0; s <= 300; s += 5) frames.push({ s, kind: s === 0 ? 'startup' : 'telemetry', speed: s === 0 ? 0 : 60, lat: north(s === 0 ? 0 : (s - 2.5) * 60 / 3.6) });
  const before = (300 - 2.5) * 60 / 3.6;
  for (let s = 519; s <= 579; s += 5) frames.push({ s, kind: s + 5 > 579 ? 'shutdown' : 'telemetry', speed: 0, lat: north(before + 798) });
  return frames;
}

describe('distanceByVSS across a reporting gap', () => {
  it('takes the GPS distance of a gap longer than a minute instead of integrating the speeds at its ends', async () => {
    const id = await device(t);
    await feed(t, id, gapDrive(), 10);
    const [s] = await statsOf(t, id);
    // driven: 0 → 60 km/h over 5 s (41.7 m), 295 s at 60 km/h (4,916.7 m); the gap: its 798 m by GPS, not
    // (60 + 0) / 2 km/h × 219 s = 1,825 m
    expect(s.distanceByVSS).toBeCloseTo(41.667 + 4916.667 + 798, 0);
    expect(Math.abs(s.distanceByVSS! - s.distanceByGPS)).toBeLessThan(s.distanceByGPS * 0.005);
  });

  it('integrates speed across a gap of at most a minute', async () => {
    const id = await device(t);
    // 60 km/h, then 30 km/h 60 s later: (60 + 30) / 2 km/h × 60 s = 750 m
    await feed(t, id, [
      { s: 0, kind: 'startup', speed: 60, lat: north(0) }, { s: 60, speed: 30, lat: north(700) }, { s: 65, kind: 'shutdown', speed: 30, lat: north(741.7) },
    ]);
    const [s] = await statsOf(t, id);
    expect(s.distanceByVSS).toBeCloseTo(750 + 41.667, 1);
  });

  it('gives the same figures with the frames of the gap arriving late, re-derived or spliced', async () => {
    const frames = gapDrive();
    const want = await (async () => { const id = await device(t); await feed(t, id, frames, 10); return (await statsOf(t, id)).map(rounded); })();
    // the samples around the gap arrive after the rest: re-derived within the bound
    const late = (f: F) => f.s >= 290 && f.s <= 529;
    for (const a of [t, small]) {
      const id = await device(a);
      await feed(a, id, frames.filter((f) => !late(f)), 10);
      await batch(a, { [id]: frames.filter(late) });
      expect((await statsOf(a, id)).map(rounded), a === t ? 're-derived' : 'spliced').toEqual(want);
    }
  });
});

describe('an impact is not also a hard brake', () => {
  const G = 9.80665;
  const accel = (x: number, y = 0) => ({ accel: { minX: Math.min(x, -0.1), maxX: Math.max(x, 0.1), minY: Math.min(y, -0.1), maxY: Math.max(y, 0.1), minZ: G - 0.1, maxZ: G + 0.1 } });
  /**
   * 50 km/h every 5 s; at 100 s an impact from the side (y 40 m/s², x −2), then 0 km/h a second later (the car stopped
   * by it: −13.9 m/s² by speed) and at rest; at 200 s, after pulling away gently, one hard brake (x −5 m/s²).
   */
  function crash(): F[] {
    const frames: F[] = [];
    let m = 0;
    const push = (s: number, speed: number, data?: Record<string, unknown>, kind: F['kind'] = 'telemetry') => {
      const prev = frames.at(-1);
      if (prev) m += ((prev.speed! + speed) / 2 / 3.6) * (s - prev.s);
      frames.push({ s, kind, speed, lat: north(m), lon: LON, data });
    };
    push(0, 0, undefined, 'startup');
    for (let s = 5; s <= 95; s += 5) push(s, Math.min(50, s * 2));
    push(100, 50, accel(-2, 4.1 * G));
    push(101, 0);
    for (let s = 105; s <= 150; s += 5) push(s, 0);
    for (let s = 155; s <= 250; s += 5) push(s, Math.min(50, (s - 150) * 2), s === 200 ? accel(-5) : undefined);
    push(255, 40);
    push(260, 30, undefined, 'shutdown');
    return frames;
  }

  it('counts the impact and the stop it caused as no hard event, and the later hard brake as one', async () => {
    const id = await device(t);
    await feed(t, id, crash(), 10);
    const [s] = await statsOf(t, id);
    expect([s.hardBrakeCount, s.hardAccelCount]).toEqual([1, 0]);
  });

  it('counts the same with the impact arriving late or in a batch of its own', async () => {
    const frames = crash();
    for (const a of [t, small]) {
      const id = await device(a);
      await feed(a, id, frames.filter((f) => f.s !== 100), 10);
      await batch(a, { [id]: frames.filter((f) => f.s === 100) });
      const [s] = await statsOf(a, id);
      expect([s.hardBrakeCount, s.hardAccelCount]).toEqual([1, 0]);
    }
    // the impact the last frame of a batch: the next batch's stop continues it
    const id = await device(t);
    const at = frames.findIndex((f) => f.s === 100);
    await feed(t, id, frames.slice(0, at + 1), at + 1);
    await feed(t, id, frames.slice(at + 1), 10);
    const [s] = await statsOf(t, id);
    expect([s.hardBrakeCount, s.hardAccelCount]).toEqual([1, 0]);
  });
});
