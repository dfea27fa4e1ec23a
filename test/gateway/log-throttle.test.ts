import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../lib/logger.js';
import { logThrottle } from '../../gateway/log-throttle.js';

function capture() {
  const lines: { msg: string; who?: string; suppressed?: number }[] = [];
  const sink = new Writable({ write(chunk, _enc, next) { for (const l of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(l)); next(); } });
  return { lines, log: createLogger('info', sink) };
}
const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('log throttle', () => {
  it('logs the first event of each client and reason at once, and the repeats of a window as one line with their count', () => {
    const { lines, log } = capture();
    let now = 1000; // (lru-cache takes a start time of 0 for "no start")
    const t = logThrottle(log, 200, () => now); // windows timed by the test's clock, not the machine's speed
    for (let i = 0; i < 50; i++) { t.warn('a', 'subscribe', { who: 'a' }, 'refused'); t.warn('b', 'subscribe', { who: 'b' }, 'refused'); }
    t.warn('a', 'publish', { who: 'a' }, 'other reason');
    now = 1199;
    t.warn('a', 'subscribe', { who: 'a' }, 'refused'); // still the window
    expect(lines.map((l) => [l.who, l.msg])).toEqual([['a', 'refused'], ['b', 'refused'], ['a', 'other reason']]);
    now = 1201;
    t.warn('a', 'subscribe', { who: 'a' }, 'refused'); // the window ended: its count, then the first of a new one
    expect(lines.slice(3).map((l) => [l.who, l.suppressed, l.msg])).toEqual([
      ['a', 50, 'refused (50 more in the last 0.2 s)'], ['a', undefined, 'refused'],
    ]);
    t.flush();
    expect(lines.slice(5).map((l) => [l.who, l.suppressed, l.msg])).toEqual([['b', 49, 'refused (49 more in the last 0.2 s)']]);
  });

  it('logs the count of a window it forgets early (more than 10,000 clients) and of the open ones at flush', async () => {
    const { lines, log } = capture();
    const t = logThrottle(log, 60_000);
    t.warn('first', 'subscribe', { who: 'first' }, 'refused');
    t.warn('first', 'subscribe', { who: 'first' }, 'refused');
    for (let i = 0; i < 10_000; i++) t.warn(`c${i}`, 'subscribe', { who: `c${i}` }, 'refused');
    await settle(20);
    expect(lines.filter((l) => l.suppressed).map((l) => [l.who, l.suppressed])).toEqual([['first', 1]]);
    t.warn('c9999', 'subscribe', { who: 'c9999' }, 'refused');
    t.flush();
    await settle(20);
    expect(lines.filter((l) => l.suppressed).map((l) => [l.who, l.suppressed])).toEqual([['first', 1], ['c9999', 1]]);
  });
});
