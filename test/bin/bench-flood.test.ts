// `drivewire bench flood` (the real binary), small, on a PostgreSQL database of its own: the paced devices' latency
// alone and beside a flooding device in one run, every paced frame stored, and the flooder held to its rate limit
// (refused payloads counted, one dead letter). Timings are printed, never checked: the machine decides them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { createTestDb } from '../helpers/db.js';

const number = expect.any(Number);
const latency = { p50: number, p99: number, max: number };

describe.skipIf(!process.env.TEST_DATABASE_URL)('drivewire bench flood, small (the real binary)', { timeout: 120_000 }, () => {
  let db: Awaited<ReturnType<typeof createTestDb>>;
  beforeAll(async () => { db = await createTestDb(); });
  afterAll(async () => { await db?.close(); });

  it('prints the paced devices\' p99 beside the flood and without it, and what the flood sent, got stored and had refused', async () => {
    const r = await runCli(['bench', 'flood', '--smoke', '--database-url', db.url!], {}, 110_000);
    expect(r.stderr).not.toMatch(/^(drivewire|bench): /m);
    expect(r.code).toBe(0);
    const f = JSON.parse(r.stdout);
    expect(f).toMatchObject({ scenario: 'flood', database: 'pg', devices: 5, ratePerDevice: 1, targetP99Ms: 250, p99UnderTarget: expect.any(Boolean) });
    expect(f.rateLimit).toEqual({ framesPerSecond: 500, framesBurst: 1000, bytesPerSecond: 1048576, bytesBurst: 2097152 });
    expect(f.baselines.withoutFlood).toMatchObject({ publishToAckMs: latency, publishErrors: 0 });
    expect(f.flood).toMatchObject({ publishToAckMs: latency, publishErrors: 0 });
    // every paced frame of both phases stored once
    expect(f.others.framesStored).toBe(f.baselines.withoutFlood.framesAcknowledged + f.flood.framesAcknowledged);
    expect(f.flood.framesAcknowledged).toBeGreaterThan(0);
    expect(f.ratioP99FloodToBaseline).toBe(Math.round((f.flood.publishToAckMs.p99 / f.baselines.withoutFlood.publishToAckMs.p99) * 100) / 100);
    const flooder = f.flood.flooder;
    // the burst and then 500 frames/s of it stored, whole payloads of 100; the rest refused by rate, with one dead letter
    expect(flooder.framesStored % 100).toBe(0);
    expect(flooder.framesStored).toBeGreaterThanOrEqual(1000);
    expect(flooder.framesStored).toBeLessThanOrEqual(1000 + 500 * flooder.seconds + 100);
    expect(flooder.payloadsRefused.rate_frames).toBeGreaterThan(0);
    expect(flooder.payloadsRefused.rate_frames + flooder.framesStored / 100).toBeLessThanOrEqual(flooder.payloadsSent);
    expect(flooder.deadLetters).toBe(1);
    expect(flooder).toMatchObject({ publishErrors: 0, disconnects: 0 });
  });
});
