import { describe, expect, it } from 'vitest';
import { buildRunFrames, DTC_CODE, type RunFrame } from '../../simulator/frames.js';
import { loadStoredRoutes } from '../../simulator/route.js';
import { SCENARIOS } from '../../simulator/scenarios.js';

const routes = await loadStoredRoutes();
const route = routes.find((r) => r.name === 'DFW - Downtown Route 1')!;
const VIN = 'VV1AB2CD3EF456789';
const startTime = new Date(Date.UTC(2026, 10, 22, 12, 0, 0));
const build = (scenarios: (typeof SCENARIOS)[number][] = [], intervalMs?: number) =>
  buildRunFrames(route, { vin: VIN, runId: 'run1', seed: 42, startTime, scenarios, intervalMs });
const G = 9.80665;
const durationOf = (frames: RunFrame[]) => frames.at(-1)!.t;

describe('buildRunFrames', () => {
  const frames = build();

  it('starts with a startup frame carrying the VIN and battery, ends with one shutdown', () => {
    expect(frames[0].frame.kind).toBe('startup');
    expect(frames[0].frame.vin).toBe(VIN);
    expect(frames[0].frame.battery).toEqual({ voltage: expect.closeTo(12.6, 0), crankingVoltage: expect.closeTo(10.4, 0) });
    expect(frames.at(-1)!.frame.kind).toBe('shutdown');
    expect(frames.slice(1, -1).every((f) => f.frame.kind === 'telemetry')).toBe(true);
  });

  it('numbers frames <runId>-<seq> and stamps ts = startTime + t', () => {
    frames.forEach((f, i) => {
      expect(f.frame.id).toBe(`run1-${i}`);
      expect(f.frame.ts).toBe(startTime.getTime() + f.t);
    });
  });

  it.each([1000, 5000])('sends a frame at least every 5 s (interval %d ms)', (intervalMs) => {
    const list = build([], intervalMs);
    list.slice(1).forEach((f, i) => expect(f.frame.ts - list[i].frame.ts).toBeLessThanOrEqual(intervalMs));
    expect(Math.abs(durationOf(list) / route.duration - 1)).toBeLessThan(0.05);
  });

  it('sends all twelve PIDs as hex data bytes, speed matching the location speed', () => {
    for (const { frame } of frames) {
      expect(Object.keys(frame.pids).sort()).toEqual(['04', '05', '06', '07', '0B', '0C', '0D', '10', '11', '1F', '42', '5E']);
      for (const hex of Object.values(frame.pids)) expect(hex).toMatch(/^([0-9A-F]{2})+$/);
      expect(Math.abs(parseInt(frame.pids['0D'], 16) - frame.location.speed)).toBeLessThanOrEqual(0.5 + 1e-9);
    }
  });

  it('is repeatable for a seed', () => {
    expect(build(['dtc', 'collision', 'duplicates'])).toEqual(build(['dtc', 'collision', 'duplicates']));
  });

  it('refuses a malformed VIN', () => {
    expect(() => buildRunFrames(route, { vin: 'VV123' })).toThrow(/vin must be 17 characters/);
  });

  it('every frame is accepted by the gateway frame decoder', async () => {
    const { decodeFrame, isRefused } = await import('../../gateway/frame.decoder.js');
    const all = build([...SCENARIOS]);
    const now = new Date(all.at(-1)!.frame.ts);
    const refused = all.map((f, i) => decodeFrame(JSON.parse(JSON.stringify(f.frame)), i, now)).filter(isRefused);
    expect(refused).toEqual([]);
  });
});

describe('scenarios', () => {
  it('hard-brake: a ≤ −4 m/s² deceleration in one place only', () => {
    const hard = build(['hard-brake']).filter((f) => f.frame.accel.minX <= -4);
    expect(hard.length).toBeGreaterThan(0);
    expect(hard.at(-1)!.t - hard[0].t).toBeLessThanOrEqual(5000);
    expect(build().some((f) => f.frame.accel.minX <= -4)).toBe(false);
  });

  it('hard-accel: a ≥ +3.5 m/s² acceleration in one place only', () => {
    const hard = build(['hard-accel']).filter((f) => f.frame.accel.maxX >= 3.5);
    expect(hard.length).toBeGreaterThan(0);
    expect(hard.at(-1)!.t - hard[0].t).toBeLessThanOrEqual(5000);
    expect(build().some((f) => f.frame.accel.maxX >= 3.5)).toBe(false);
  });

  it(`dtc: ${DTC_CODE} from ~40% to ~70% of the drive, then dtcs: [] until the end`, () => {
    const list = build(['dtc']);
    const D = durationOf(list);
    for (const f of list) {
      if (f.t < 0.4 * D) expect(f.frame.dtcs).toBeUndefined();
      else if (f.t < 0.7 * D) expect(f.frame.dtcs).toEqual([DTC_CODE]);
      else expect(f.frame.dtcs).toEqual([]);
    }
    expect(list.filter((f) => f.frame.dtcs?.length).length).toBeGreaterThan(0.25 * list.length);
  });

  it('weak-battery: the startup frame cranks at ~5.5 V (PID 42 too)', () => {
    const startup = build(['weak-battery'])[0].frame;
    expect(Math.abs(startup.battery!.crankingVoltage - 5.5)).toBeLessThan(0.4);
    expect(parseInt(startup.pids['42'], 16) / 1000).toBeLessThan(6);
    expect(build()[0].frame.battery!.crankingVoltage).toBeGreaterThanOrEqual(10);
  });

  it('collision: one frame with an accelerometer spike ≥ 4 g and collision.peakG', () => {
    const list = build(['collision']);
    const hits = list.filter((f) => f.frame.collision);
    expect(hits).toHaveLength(1);
    const { frame, t } = hits[0];
    expect(frame.collision!.peakG).toBeGreaterThanOrEqual(4);
    expect(Math.abs(frame.accel.minX) / G).toBeCloseTo(frame.collision!.peakG, 2);
    expect(t / durationOf(list)).toBeGreaterThanOrEqual(0.5);
    expect(list.filter((f) => Math.abs(f.frame.accel.minX) >= 4 * G)).toHaveLength(1);
  });

  it('collision: the car stands from the frame after the impact (speed 0 in location and PID 0D) until its shutdown', () => {
    const list = build(['collision']);
    const at = list.findIndex((f) => f.frame.collision);
    const after = list.slice(at + 1);
    expect(after.length).toBeGreaterThanOrEqual(30);
    for (const f of after) {
      expect(f.frame.location.speed).toBe(0);
      expect(f.frame.pids['0D']).toBe('00');
      expect([f.frame.location.lat, f.frame.location.lon]).toEqual([list[at].frame.location.lat, list[at].frame.location.lon]);
    }
    expect(after.at(-1)!.frame.kind).toBe('shutdown');
  });

  it('gps-gap: ~20% of the drive (contiguous telemetry) is marked buffered', () => {
    const list = build(['gps-gap']);
    const held = list.filter((f) => f.buffered);
    expect(held.every((f) => f.frame.kind === 'telemetry')).toBe(true);
    expect(Math.abs((held.at(-1)!.t - held[0].t) / durationOf(list) - 0.2)).toBeLessThan(0.01);
    const first = list.indexOf(held[0]);
    expect(list.slice(first, first + held.length).every((f) => f.buffered)).toBe(true);
  });

  it('duplicates: ~3% of telemetry frames (at least 2) are marked to be sent twice', () => {
    const list = build(['duplicates']);
    const dup = list.filter((f) => f.duplicate);
    expect(dup.length).toBeGreaterThanOrEqual(2);
    expect(dup.length).toBeLessThanOrEqual(Math.ceil(list.length * 0.03) + 1);
    expect(dup.every((f) => f.frame.kind === 'telemetry' && !f.buffered)).toBe(true);
  });
});
