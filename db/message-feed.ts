import type { Knex } from 'knex';
import type { Db } from './connection.js';
import type { StoredMessage } from '../lib/bus.js';
import { prepared } from './prepared.js';
import { uuidArray } from './binary-array.js';
import { listenChannel } from './pg-listen.js';
import { messageData } from './message-data.sql.js';

/** PostgreSQL channel the ingest batches notify at commit; the payload is the batch's feed number. */
export const FEED_CHANNEL = 'drivewire_feed';
/** Batches kept in message_feed: a reader more than this far behind has been down, not slow. */
const KEEP_BATCHES = 10_000;
/** The writers prune once every this many batches (a range delete on the primary key, in the same statement). */
const PRUNE_EVERY = 100;

const RECORD_BATCH = `
  WITH s AS (UPDATE message_feed_seq SET seq = seq + 1 RETURNING seq),
  f AS (INSERT INTO message_feed (seq, message_ids, device_ids) SELECT s.seq, ?::uuid[], ?::uuid[] FROM s),
  pruned AS (DELETE FROM message_feed WHERE (SELECT seq FROM s) % ${PRUNE_EVERY} = 0 AND seq <= (SELECT seq FROM s) - ${KEEP_BATCHES})
  SELECT s.seq, pg_notify('${FEED_CHANNEL}', s.seq::text) FROM s`;

/**
 * Called at the very end of each ingest transaction that stored messages (migration 009): takes the next
 * feed number (the counter row stays locked until commit, so numbers follow commit order without gaps),
 * records the batch's message and device ids under it as ONE row (two arrays: the feed costs the ingest
 * path one row per batch, not one per message) and notifies the readers (PostgreSQL delivers NOTIFY at
 * commit, in commit order). One statement per batch, which every PRUNE_EVERY batches also deletes the
 * rows more than KEEP_BATCHES behind (a one-time filter otherwise: no scan).
 */
export async function recordFeedBatch(trx: Knex.Transaction, messages: { id: string; deviceId: string }[]): Promise<void> {
  if (!messages.length) return;
  await prepared(trx, RECORD_BATCH, [uuidArray(messages.map((m) => m.id)), uuidArray(messages.map((m) => m.deviceId))]);
}

/** The feed readers (createMessageFeed) open in this process, by the knex of their database. */
const readers = new WeakMap<Knex, number>();

/**
 * Whether the feed of `db` may have a reader, so that an ingest batch is worth recording in it (asked per batch): on
 * PostgreSQL always (API processes elsewhere follow it); on PGlite, which no other process can open, while a reader of
 * this process is open. A reader starts after the newest batch committed when it opens, so the batches not recorded
 * before it are none it would read.
 */
export const feedFollowed = (db: Pick<Db, 'knex' | 'kind'>): boolean => db.kind === 'pg' || (readers.get(db.knex) ?? 0) > 0;

/** The newest committed feed number. */
async function committedSeq(knex: Knex): Promise<number> {
  const row = await knex('message_feed_seq').first('seq');
  return Number(row?.seq ?? 0);
}

/** Messages of the given devices recorded under feed numbers in (after, upto], in commit order. */
async function feedMessages(knex: Knex, devices: string[], after: number, upto: number) {
  const { rows } = await knex.raw(`
    SELECT f.seq, m.id, m.device_id, m.ts, ${messageData('m')} AS data
      FROM message_feed f
      CROSS JOIN LATERAL unnest(f.message_ids, f.device_ids) AS u(message_id, device_id)
      -- message by message through (device_id, ts, id), the id giving the timestamp (never a hash over a sequential scan
      -- of every message)
      CROSS JOIN LATERAL (SELECT mm.* FROM messages mm WHERE mm.device_id = u.device_id
        AND mm.ts = message_id_ts(u.message_id) AND mm.id = u.message_id OFFSET 0) m
     WHERE f.seq > ? AND f.seq <= ? AND u.device_id = ANY(?::uuid[])
     ORDER BY f.seq, m.ts`, [after, upto, devices]);
  return (rows as { seq: number | string; id: string; device_id: string; ts: Date; data: Record<string, unknown> }[])
    .map((r) => ({ seq: Number(r.seq), message: { id: r.id, deviceId: r.device_id, timestamp: r.ts, data: r.data } as StoredMessage }));
}

interface Watcher { fn: (m: StoredMessage) => void; from: number }

/** Subscriptions by device; each watcher gets the messages of batches numbered after its `from`. */
function watcherRegistry() {
  const byDevice = new Map<string, Set<Watcher>>();
  return {
    size: () => byDevice.size,
    devices: () => [...byDevice.keys()],
    /** Adds a watcher; the returned function removes it. */
    add(deviceId: string, w: Watcher): () => void {
      const set = byDevice.get(deviceId) ?? new Set();
      set.add(w);
      byDevice.set(deviceId, set);
      return () => {
        set.delete(w);
        if (!set.size && byDevice.get(deviceId) === set) byDevice.delete(deviceId);
      };
    },
    dispatch(seq: number, message: StoredMessage) {
      for (const w of [...(byDevice.get(message.deviceId) ?? [])]) if (seq > w.from) w.fn(message);
    },
    clear: () => byDevice.clear(),
  };
}

export interface FeedOptions {
  /** ms between catch-up reads while some device is watched (a safety net under LISTEN; the only path on PGlite). */
  pollMs?: number;
  /** ms before a lost LISTEN connection is opened again. */
  reconnectMs?: number;
}

/**
 * New messages of watched devices read from the database, for an API process that does not run the
 * gateway (`--only api`). It follows the feed numbers of migration 009, never a clock: a batch that
 * commits late, or comes from a gateway whose clock is off, is streamed when it commits, exactly once.
 * A subscription gets the batches numbered after the newest one known when it subscribed. On PostgreSQL
 * a LISTEN connection wakes the reader at each commit; a read every pollMs catches up if it was lost.
 */
export function createMessageFeed(db: Pick<Db, 'knex' | 'kind'>, opts: FeedOptions = {}) {
  const { knex } = db;
  readers.set(knex, (readers.get(knex) ?? 0) + 1);
  const pollMs = opts.pollMs ?? (db.kind === 'pg' ? 1000 : 200);
  const watchers = watcherRegistry();
  let cursor = 0; // every batch up to here was dispatched (or nobody watched)
  let known = 0; // newest feed number heard of
  let closed = false;
  let reading: Promise<void> | null = null;
  let again = false;
  let timer: NodeJS.Timeout | null = null;
  let started = false; // the newest committed batch has been read once: nothing before it is ever streamed
  const listener = db.kind === 'pg' ? listenChannel(knex, FEED_CHANNEL, opts.reconnectMs ?? 1000, (seq) => heard(Number(seq)), () => void refresh()) : null;

  function heard(seq: number) {
    if (seq > known) known = seq;
    if (watchers.size()) void read();
  }

  async function refresh(): Promise<void> {
    try {
      const seq = await committedSeq(knex);
      if (!started) { started = true; cursor = Math.max(cursor, seq); }
      heard(seq);
    } catch { /* the next poll tries again */ }
  }
  const ready = refresh().then(() => { cursor = Math.max(cursor, known); });

  async function readOnce(): Promise<void> {
    // A number heard on LISTEN is committed already (NOTIFY is delivered at commit, in commit order), and so is
    // every number before it: a wake-up reads up to it without asking for the counter again; a poll asks.
    const upto = started && known > cursor ? known : await committedSeq(knex);
    if (upto > known) known = upto;
    if (!watchers.size() || !started) { started = true; cursor = upto; return; }
    if (upto <= cursor) return;
    for (const { seq, message } of await feedMessages(knex, watchers.devices(), cursor, upto)) watchers.dispatch(seq, message);
    cursor = upto;
  }

  /** One read at a time; a wake-up during a read runs one more after it. */
  function read(): Promise<void> {
    if (reading) { again = true; return reading; }
    reading = readOnce().catch(() => undefined).finally(() => {
      reading = null;
      if (again && !closed) { again = false; void read(); }
    });
    return reading;
  }

  const tick = () => {
    timer = null;
    if (closed || !watchers.size()) return;
    void read().finally(() => { if (!closed && watchers.size() && !timer) timer = setTimeout(tick, pollMs); });
  };

  return {
    /** Resolves once the feed knows the newest committed batch (subscriptions before that start from 0). */
    ready,
    onMessage(deviceId: string, fn: (m: StoredMessage) => void): () => void {
      if (!watchers.size()) { cursor = Math.max(cursor, known); timer ??= setTimeout(tick, pollMs); }
      const remove = watchers.add(deviceId, { fn, from: Math.max(cursor, known) });
      return () => {
        remove();
        if (!watchers.size() && timer) { clearTimeout(timer); timer = null; }
      };
    },
    async close() {
      if (!closed) readers.set(knex, (readers.get(knex) ?? 1) - 1);
      closed = true;
      if (timer) clearTimeout(timer);
      timer = null;
      watchers.clear();
      await listener?.close();
    },
  };
}
