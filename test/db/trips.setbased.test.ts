import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { batch, drive, tripsOf } from './trips.fixtures.js';

let t: TestApp;
beforeAll(async () => { t = await buildTestApp(); });
afterAll(async () => { await t?.close(); });

async function fleet(n: number) {
  const app = await t.make.application();
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push((await t.make.device(app.principal)).id);
  return ids;
}

/** Runs one batch holding `frames` for every device; returns the statements the trips stage ran. */
async function statements(ids: string[], frames: ReturnType<typeof drive>) {
  let n = 0;
  await batch(t, Object.fromEntries(ids.map((id) => [id, frames])), () => { n++; });
  return n;
}

describe('trips stage, set-based per batch', () => {
  it('runs the same number of statements for 1 device as for 15: opening, advancing, closing and late', async () => {
    const [one, many] = [await fleet(1), await fleet(15)];
    const frames = drive(0, 600, 40);
    const steps = [frames.slice(0, 40), frames.slice(40, 80), frames.slice(80), frames.slice(30, 35)];
    for (const [i, step] of steps.entries()) {
      const late = i === 3 ? step.map((f) => ({ ...f, s: f.s + 1 })) : step; // new frames inside the completed trip
      const [a, b] = [await statements(one, late), await statements(many, late)];
      expect(b, `step ${i}`).toBe(a);
      // opening: segment + events; advancing: continue; closing: segment + preview + report cards + events; late: the
      // same after the plan of its bound (db/trips/segment.ts RecomputeBounds)
      expect(a, `step ${i}`).toBe([2, 1, 4, 5][i]);
    }
    for (const id of [...one, ...many]) {
      expect((await tripsOf(t, id)).map((x: any) => [x.end_reason, x.message_count])).toEqual([['shutdown', frames.length + 5]]);
    }
  });
});
