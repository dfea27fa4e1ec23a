// The cross-process live feed: it follows commit order, never a clock. A batch that commits
// late, or whose gateway clock is off, is streamed once; a subscription gets nothing from before it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Knex } from 'knex';
import { repositories, type Repositories } from '../../db/index.js';
import { createMessageFeed, recordFeedBatch } from '../../db/message-feed.js';
import type { StoredMessage } from '../../lib/bus.js';
import { createTestDb } from '../helpers/db.js';
import { factories } from '../helpers/factories.js';
import { uuid7 } from '../../lib/uuid7.js';

let db: Awaited<ReturnType<typeof createTestDb>>;
let repos: Repositories;
let make: ReturnType<typeof factories>;

beforeAll(async () => {
  db = await createTestDb();
  repos = repositories(db.knex);
  make = factories(repos);
});
afterAll(async () => { await db?.close(); });

/** Stores `n` messages of a device as one ingest batch would (received `clockOffMs` off the real time). */
async function store(trx: Knex.Transaction, deviceId: string, n: number, clockOffMs = 0) {
  const receivedAt = new Date(Date.now() + clockOffMs);
  const rows = Array.from({ length: n }, (_, i) => {
    const timestamp = new Date(Date.now() - 60_000 + i);
    return { id: uuid7(timestamp.getTime()), deviceId, timestamp, kind: 'telemetry',
    data: { vehicleSpeed: i }, lon: null, lat: null, extra: null, receivedAt };
  });
  await repos.ingest.insertMessages(rows, trx);
  return rows;
}
const batch = (deviceId: string, n: number, clockOffMs = 0) => db.knex.transaction(async (trx) => {
  const rows = await store(trx, deviceId, n, clockOffMs);
  await recordFeedBatch(trx, rows);
  return rows.map((r) => r.id);
});

const until = async (ok: () => boolean, ms = 10_000) => {
  const deadline = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
};

function watch(feed: ReturnType<typeof createMessageFeed>, deviceId: string) {
  const got: StoredMessage[] = [];
  const off = feed.onMessage(deviceId, (m) => got.push(m));
  return { got, off, ids: () => got.map((m) => m.id) };
}

describe('message feed', () => {
  it('streams each committed batch once, and nothing stored before the subscription', async () => {
    const d = await make.device();
    const before = await batch(d.id, 3);
    const feed = createMessageFeed(db, { pollMs: 50 });
    await feed.ready;
    const w = watch(feed, d.id);
    const after = await batch(d.id, 4);
    await until(() => w.got.length >= 4);
    await new Promise((r) => setTimeout(r, 200));
    expect(w.ids()).toEqual(after);
    expect(w.ids().some((id) => (before as string[]).includes(id))).toBe(false);
    w.off();
    await feed.close();
  });

  it('streams messages whose gateway clock is 10 s behind or ahead', async () => {
    const d = await make.device();
    const feed = createMessageFeed(db, { pollMs: 50 });
    await feed.ready;
    const w = watch(feed, d.id);
    const ahead = await batch(d.id, 2, 10_000);
    const behind = await batch(d.id, 2, -10_000);
    await until(() => w.got.length >= 4);
    await new Promise((r) => setTimeout(r, 200));
    expect(w.ids()).toEqual([...ahead, ...behind]);
    await feed.close();
  });

  it('a second subscription starts at its own subscription', async () => {
    const d = await make.device();
    const feed = createMessageFeed(db, { pollMs: 50 });
    await feed.ready;
    const first = watch(feed, d.id);
    const one = await batch(d.id, 1);
    await until(() => first.got.length >= 1);
    const second = watch(feed, d.id);
    const two = await batch(d.id, 1);
    await until(() => first.got.length >= 2 && second.got.length >= 1);
    expect(first.ids()).toEqual([...one, ...two]);
    expect(second.ids()).toEqual(two);
    await feed.close();
  });

  // Two open transactions at once need two connections: PostgreSQL only (PGlite is one process, one connection).
  it.runIf(process.env.TEST_DATABASE_URL)('streams a batch that commits 8 s late while another gateway flows', async () => {
    const slow = await make.device();
    const fast = await make.device();
    const feed = createMessageFeed(db, { pollMs: 60_000 }); // LISTEN alone must wake it
    await feed.ready;
    const ws = watch(feed, slow.id);
    const wf = watch(feed, fast.id);
    let release!: () => void;
    const held = new Promise<void>((r) => { release = r; });
    // The slow batch stores its messages (received now), then stalls 8 s before it takes its feed number and commits.
    const late = db.knex.transaction(async (trx) => {
      const rows = await store(trx, slow.id, 10);
      await held;
      await recordFeedBatch(trx, rows);
      return rows.map((r) => r.id);
    });
    const flowing: string[] = [];
    const started = Date.now();
    while (Date.now() - started < 8_000) {
      flowing.push(...(await batch(fast.id, 2)));
      await new Promise((r) => setTimeout(r, 250));
    }
    release();
    const lateIds = await late;
    await until(() => ws.got.length >= 10 && wf.got.length >= flowing.length);
    await new Promise((r) => setTimeout(r, 300));
    expect(ws.ids()).toEqual(lateIds);
    expect(wf.ids()).toEqual(flowing);
    await feed.close();
  }, 20_000);
  it('prunes, in the recording statement, the rows 10,000 batches behind, once every 100 batches', async () => {
    const d = await make.device();
    const seqs = async () => (await db.knex('message_feed').select('seq').orderBy('seq')).map((r: { seq: string | number }) => Number(r.seq));
    await db.knex('message_feed').del();
    await db.knex('message_feed_seq').update({ seq: 20_098 });
    await db.knex('message_feed').insert([10_099, 10_100, 10_101].map((seq) => ({ seq, message_ids: [], device_ids: [] })));
    await batch(d.id, 1); // 20,099: not a multiple of 100, nothing pruned
    expect(await seqs()).toEqual([10_099, 10_100, 10_101, 20_099]);
    await batch(d.id, 1); // 20,100: everything at or below 10,100 goes
    expect(await seqs()).toEqual([10_101, 20_099, 20_100]);
  });
});
