import { describe, expect, it } from 'vitest';
import { buildRunFrames, type RunFrame } from '../../simulator/frames.js';
import { createPacer } from '../../simulator/pacing.js';
import { loadStoredRoutes } from '../../simulator/route.js';

const routes = await loadStoredRoutes();
const route = routes.find((r) => r.name === 'DFW - Downtown Route 1')!;
const VIN = 'VV1AB2CD3EF456789';
const build = (scenarios: 'collision'[] = [], intervalMs?: number) =>
  buildRunFrames(route, { vin: VIN, runId: 'run1', seed: 42, scenarios, intervalMs });

/** Plays every frame through the pacer, setting the interval (ms) when frame `at` is due. */
function play(frames: RunFrame[], baseMs: number, at: number, ms: number) {
  const pacer = createPacer(frames, baseMs);
  const sent: { i: number; run: RunFrame }[] = [];
  let applied = 0;
  frames.forEach((_, i) => {
    if (i === at) applied = pacer.setInterval(ms);
    const run = pacer.take(i);
    if (run) sent.push({ i, run });
  });
  return { sent, applied, pacer };
}

describe('createPacer', () => {
  const frames = build();

  it('sends every frame at the base interval', () => {
    const pacer = createPacer(frames, 1000);
    expect(pacer.remaining()).toBe(frames.length);
    expect(frames.map((_, i) => pacer.take(i))).toEqual(frames);
    expect(pacer.remaining()).toBe(0);
  });

  it('from the last frame sent on, sends frames the new interval apart, and the last one', () => {
    const { sent, applied } = play(frames, 1000, 100, 5000);
    expect(applied).toBe(5000);
    const times = sent.map((s) => s.run.t);
    expect(times.slice(0, 100)).toEqual(frames.slice(0, 100).map((f) => f.t));
    const after = times.slice(99, -1);
    expect(new Set(after.slice(1).map((t, i) => t - after[i]))).toEqual(new Set([5000]));
    expect(sent.at(-1)!.run).toMatchObject({ t: frames.at(-1)!.t, frame: { kind: 'shutdown' } });
    expect(frames.at(-1)!.t - after.at(-1)!).toBeLessThanOrEqual(5000);
  });

  it('counts what remains at the interval set', () => {
    const pacer = createPacer(frames, 1000);
    for (let i = 0; i <= 10; i++) pacer.take(i);
    pacer.setInterval(5000);
    const expected = frames.filter((f, i) => i > 10 && (i === frames.length - 1 || (f.t - frames[10].t) % 5000 === 0)).length;
    expect(pacer.remaining()).toBe(expected);
    let taken = 0;
    for (let i = 11; i < frames.length; i++) if (pacer.take(i)) taken++;
    expect(taken).toBe(expected);
  });

  it('applies a whole number of base intervals, at least one', () => {
    const pacer = createPacer(build([], 1500), 1500);
    expect(pacer.setInterval(5000)).toBe(6000);
    expect(pacer.setInterval(1000)).toBe(1500);
    expect(pacer.intervalMs()).toBe(1500);
  });

  it('folds the accelerometer extremes and the collision of the frames left out into the next one sent', () => {
    const list = build(['collision']);
    const hit = list.findIndex((f) => f.frame.collision);
    const { sent } = play(list, 1000, hit - 3, 10_000);
    expect(sent.some((s) => s.i === hit)).toBe(false);
    const next = sent.find((s) => s.i > hit)!;
    expect(next.run.frame.collision).toEqual(list[hit].frame.collision);
    const between = list.slice(sent[sent.indexOf(next) - 1].i + 1, next.i + 1);
    expect(next.run.frame.accel.minX).toBe(Math.min(...between.map((f) => f.frame.accel.minX)));
    expect(next.run.frame.accel.maxZ).toBe(Math.max(...between.map((f) => f.frame.accel.maxZ)));
    expect(next.run.frame.accel.minX).toBe(list[hit].frame.accel.minX);
    // The frames themselves are left as built.
    expect(list[next.i].frame.collision).toBeUndefined();
  });
});
