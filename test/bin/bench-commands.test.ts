// `drivewire bench commands` (the real binary), small (--smoke: 20 devices, no baseline), on the embedded database or,
// in the suite's PostgreSQL phase, on a database of its own: every ping POSTed through the API arrives at its device
// and succeeds, and each figure is there. Timings are printed, never checked: the machine decides them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commandsScenario } from '../../bench/commands.bench.js';
import { runCli } from '../helpers/cli.js';
import { createTestDb } from '../helpers/db.js';

const number = expect.any(Number);
const latency = { p50: number, p99: number, max: number };

describe('the commands scenario\'s problems', () => {
  const ok = { devices: 3, succeeded: 3, allSucceeded: true, repliesAcknowledged: 3, states: { succeeded: 3 }, postStatuses: { 201: 3 } };
  const problems = (r: object) => commandsScenario.problems!(r as never);

  it('has none when every command succeeded and every reply was stored', () => {
    expect(problems(ok)).toEqual([]);
  });

  it('names a command left in another state, and a reply not acknowledged', () => {
    expect(problems({ ...ok, succeeded: 2, allSucceeded: false, repliesAcknowledged: 2, states: { succeeded: 2, queued: 1 } })).toEqual([
      'commands: 2 of 3 commands succeeded ({"succeeded":2,"queued":1}; POSTs {"201":3})',
      'commands: 2 of 3 replies acknowledged by the gateway',
    ]);
  });
});

describe('drivewire bench commands, small (the real binary)', { timeout: 120_000 }, () => {
  let db: Awaited<ReturnType<typeof createTestDb>> | null = null;
  beforeAll(async () => { if (process.env.TEST_DATABASE_URL) db = await createTestDb(); });
  afterAll(async () => { await db?.close(); });

  it('POSTs a ping to each device, and each arrives at its device and succeeds', async () => {
    const r = await runCli(['bench', 'commands', '--smoke', ...(db?.url ? ['--database-url', db.url] : [])], { DATABASE_URL: '' }, 110_000);
    expect(r.stderr).not.toMatch(/^(drivewire|bench): /m);
    expect(r.code).toBe(0);
    const c = JSON.parse(r.stdout);
    expect(c).toMatchObject({
      scenario: 'commands', database: db?.url ? 'pg' : 'pglite', devices: 20, postsInFlight: 64, posted: 20,
      postStatuses: { 201: 20 }, states: { succeeded: 20 }, succeeded: 20, allSucceeded: true, repliesAcknowledged: 20,
      postMs: latency, postToDeliveredAtDeviceMs: latency, postToSucceededMs: latency, postToReplyAckedAtDeviceMs: latency,
      commandsPerSecond: number, target: { p99PostToSucceededMs: 1000, met: expect.any(Boolean) }, baselines: null,
    });
    // a command arrives before it succeeds, and succeeds (its respondedAt) before the device has its reply's PUBACK
    expect(c.postToDeliveredAtDeviceMs.p50).toBeLessThanOrEqual(c.postToSucceededMs.p50);
    expect(c.postToSucceededMs.max).toBeLessThanOrEqual(c.postToReplyAckedAtDeviceMs.max);
    for (const stage of Object.values(c.stagesMs)) expect(stage).toEqual(latency);
    expect(c.batches.replyTransactions).toBeGreaterThanOrEqual(1);
    expect(c.batches.replyTransactions).toBeLessThanOrEqual(20);
  });
});
