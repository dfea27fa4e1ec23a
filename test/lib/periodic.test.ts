import { describe, expect, it } from 'vitest';
import { every } from '../../lib/periodic.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('a periodic task', () => {
  it('runs one at a time, and its stop starts nothing more and waits for the run in progress', async () => {
    let runs = 0;
    let active = 0;
    let most = 0;
    const task = every(5, async () => {
      runs++;
      most = Math.max(most, ++active);
      await sleep(40); // eight ticks pass during a run
      active--;
    });
    await expect.poll(() => runs, { interval: 1 }).toBe(1);
    const stopping = task.stop();
    expect(active).toBe(1);
    await stopping;
    expect(active).toBe(0); // the run in progress had ended
    expect(most).toBe(1);
    await sleep(60);
    expect(runs).toBe(1);
  });

  it('tells a task of several steps that it was stopped, so the steps after the stop are not taken', async () => {
    const steps: number[] = [];
    let stopping: Promise<void> | null = null;
    const task = every(5, async (stopped) => {
      for (let k = 1; k <= 3; k++) {
        if (stopped()) return;
        steps.push(k);
        if (k === 1) stopping = task.stop();
        await sleep(5);
      }
    });
    await expect.poll(() => stopping !== null, { interval: 1 }).toBe(true);
    await stopping;
    expect(steps).toEqual([1]);
  });

  it('goes on after a run that failed', async () => {
    let runs = 0;
    const task = every(5, async () => { runs++; throw new Error('the task reports its own errors'); });
    await expect.poll(() => runs, { interval: 1 }).toBeGreaterThanOrEqual(3);
    await task.stop();
  });
});
