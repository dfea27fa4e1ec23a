// `drivewire bench history` (the real binary), small (--smoke: 40,000 messages, 5 devices, 3 s), on a PostgreSQL
// database of its own: every figure on the empty database and on the loaded one, with their ratios, and the day drop
// (or why there is none). Timings are printed, never checked: the machine decides them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { longestGap } from '../../bench/history.drop.js';
import { runCli } from '../helpers/cli.js';
import { createTestDb } from '../helpers/db.js';

const number = expect.any(Number);
const http = { requestsPerSecond: number, latencyMs: { p50: number, p99: number, max: number }, non2xx: 0, errors: 0 };
const ingest = { framesStoredPerSecond: number, publishToCommitMs: { p50: number, p99: number, max: number }, publishErrors: 0 };
const ratio = (a: number, b: number) => Math.round((a / b) * 100) / 100;

describe('the history scenario\'s longest gap between acknowledgements', () => {
  const acks = Float64Array.from([1, 2, 5, 6, 10, 11]);

  it('takes each gap of which any part lies in the interval', () => {
    expect(longestGap(acks, 0, 3)).toBe(3);
    expect(longestGap(acks, 5.5, 5.7)).toBe(1);
    expect(longestGap(acks, 7, 12)).toBe(4);
  });

  it('is null where fewer than two acknowledgements surround the interval', () => {
    expect(longestGap(acks, 20, 30)).toBeNull();
    expect(longestGap(Float64Array.from([1]), 0, 2)).toBeNull();
  });
});

describe.skipIf(Boolean(process.env.TEST_DATABASE_URL))('drivewire bench history on the embedded database', () => {
  it('is refused with a message that says it needs PostgreSQL', async () => {
    const r = await runCli(['bench', 'history', '--no-save'], { DATABASE_URL: '' });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/history scenario runs on PostgreSQL only.*--database-url/);
    expect(r.stdout).toBe('');
  });
});

describe.skipIf(!process.env.TEST_DATABASE_URL)('drivewire bench history, small (the real binary)', { timeout: 180_000 }, () => {
  let db: Awaited<ReturnType<typeof createTestDb>>;
  beforeAll(async () => { db = await createTestDb(); });
  afterAll(async () => { await db?.close(); });

  it('measures the empty database, then the loaded one, and gives each loaded figure\'s ratio to its empty one', async () => {
    const r = await runCli(['bench', 'history', '--smoke', '--database-url', db.url!], {}, 170_000);
    expect(r.stderr).not.toMatch(/^(drivewire|bench): /m);
    expect(r.code).toBe(0);
    const h = JSON.parse(r.stdout);
    // 20,000 for the API's device, the rest over the 999 others
    expect(h.history).toMatchObject({ messages: 20_000 + 999 * 20, devices: 1000, days: 30, targetDeviceMessages: 20_000, otherDevicesMessagesEach: 20 });
    expect(h.load).toEqual({ devices: 5, window: 10, ratePerDevice: 'unbounded', measuredSeconds: 3 });
    for (const phase of [h.empty, h.loaded]) {
      expect(phase.api).toEqual({ messages: http, trips: http });
      expect(phase.ingest).toMatchObject(ingest);
      expect(phase.ingest.framesStored).toBe(phase.ingest.framesAcknowledged);
      expect(phase.ingest.framesAcknowledged).toBeGreaterThan(0);
      expect(phase.storage.bytesPerMessage).toBe(Math.round(phase.storage.bytes / phase.storage.messages));
    }
    // the empty database holds the API device's history and the first load's frames; the loaded one all of it and both loads'
    expect(h.empty.storage.messages).toBe(20_000 + h.empty.ingest.framesStored);
    expect(h.loaded.storage.messages).toBe(h.history.messages + h.empty.ingest.framesStored + h.loaded.ingest.framesStored);
    expect(h.ratios).toEqual({
      ingestFramesPerSecond: ratio(h.loaded.ingest.framesStoredPerSecond, h.empty.ingest.framesStoredPerSecond),
      ingestPublishToCommitP99: ratio(h.loaded.ingest.publishToCommitMs.p99, h.empty.ingest.publishToCommitMs.p99),
      messagesPageP99: ratio(h.loaded.api.messages.latencyMs.p99, h.empty.api.messages.latencyMs.p99),
      tripsPageP99: ratio(h.loaded.api.trips.latencyMs.p99, h.empty.api.trips.latencyMs.p99),
      bytesPerMessage: ratio(h.loaded.storage.bytesPerMessage, h.empty.storage.bytesPerMessage),
    });
    expect(h.goals).toEqual({ ingestRatio: 0.9, apiP99Ratio: 1.5, bytesPerMessage: 450 });
    // the oldest whole day: 1/30 of each device's messages
    expect(h.dropDay).toMatchObject({ dropped: { name: expect.stringMatching(/^messages_p\d{8}$/), rows: number }, seconds: number, publishErrors: 0 });
    expect(h.dropDay.longestAckGapMs.duringDrop).toBeGreaterThan(0);
  });
});
