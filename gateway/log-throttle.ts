// A client can repeat a refused act as fast as it can send packets (a SUBSCRIBE of many filters, a reconnect loop):
// logged each time, one client could write hundreds of thousands of lines in seconds. Per client and reason, the first
// event of a window is logged at once; the repeats within the window are counted and logged as one line when the window
// ends. Bounded memory: beyond MAX_KEYS (client, reason) pairs the oldest window ends early (its count is logged then).
import { LRUCache } from 'lru-cache';
import type { Logger } from '../lib/logger.js';

const MAX_KEYS = 10_000;

type Level = 'info' | 'warn';
interface Window { level: Level; fields: Record<string, unknown>; msg: string; suppressed: number }

/** `now`: the clock windows are timed by (ms; tests pass their own). */
export function logThrottle(log: Logger, windowMs: number, now: () => number = () => performance.now()) {
  const windows = new LRUCache<string, Window>({
    // ttlResolution 0: the clock read at each check, not cached for a millisecond of the machine's (a test's clock moves at once)
    max: MAX_KEYS, ttl: windowMs, ttlAutopurge: true, updateAgeOnGet: false, perf: { now }, ttlResolution: 0,
    dispose: (w) => {
      if (!w.suppressed) return;
      log[w.level]({ ...w.fields, suppressed: w.suppressed }, `${w.msg} (${w.suppressed} more in the last ${windowMs / 1000} s)`);
    },
  });
  const note = (level: Level) => (who: string, reason: string, fields: Record<string, unknown>, msg: string): void => {
    const key = `${reason}\u0000${who}`;
    const w = windows.get(key);
    if (w) { w.suppressed++; return; }
    windows.set(key, { level, fields, msg, suppressed: 0 });
    log[level](fields, msg);
  };
  return {
    info: note('info'),
    warn: note('warn'),
    /** Logs the counts of the windows still open (at shutdown). */
    flush: () => windows.clear(),
  };
}
export type LogThrottle = ReturnType<typeof logThrottle>;
