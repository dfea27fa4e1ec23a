// `drivewire bench start` (the real binary): the real `drivewire serve` on a new embedded data directory, then
// restarted, each timed to its first /health answer with its RSS read while idle, against PGlite with PostGIS alone
// started the same two ways. Runs on the embedded database only (the suite's PGlite phase); CI's bench:smoke runs the
// scenario on PostgreSQL.
import { describe, expect, it } from 'vitest';
import { readingTimes } from '../../bench/start.bench.js';
import { runCli } from '../helpers/cli.js';

const start = { readySeconds: expect.any(Number), rssMB: { 2: expect.any(Number) } };

describe('drivewire bench start', () => {
  it('reads the RSS every 10 s up to the idle time, and at it', () => {
    expect(readingTimes(3)).toEqual([3]);
    expect(readingTimes(30)).toEqual([10, 20, 30]);
    expect(readingTimes(45)).toEqual([10, 20, 30, 40, 45]);
  });

  it.skipIf(Boolean(process.env.TEST_DATABASE_URL))('starts and restarts the embedded platform and bare PGlite, and gives their ratios', async () => {
    const r = await runCli(['bench', 'start', '--duration', '2', '--no-save'], {}, 230_000);
    expect(r.stderr).not.toMatch(/^(drivewire|bench): /m);
    expect(r.code).toBe(0);
    const result = JSON.parse(r.stdout);
    expect(result).toMatchObject({ scenario: 'start', database: 'pglite', idleSeconds: 2,
      platform: { firstStart: start, restart: start }, baselines: { barePglite: { firstStart: start, restart: start } } });
    const { platform, baselines } = result;
    for (const s of [platform.firstStart, platform.restart, baselines.barePglite.firstStart, baselines.barePglite.restart]) {
      expect(s.readySeconds).toBeGreaterThan(0);
      expect(Object.keys(s.rssMB)).toEqual(['2']);
      expect(s.rssMB[2]).toBeGreaterThan(50); // a started PostgreSQL in WebAssembly, read from /proc
    }
    // the ratios are the platform's figures over the bare ones (rounded to 2 decimals), not figures of their own
    expect(baselines.ratioRestartSeconds).toBeCloseTo(platform.restart.readySeconds / baselines.barePglite.restart.readySeconds, 1);
    expect(baselines.ratioRestartIdleRss).toBeCloseTo(platform.restart.rssMB[2] / baselines.barePglite.restart.rssMB[2], 1);
  }, 240_000);
});
