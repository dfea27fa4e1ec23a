import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { ensurePartitions } from '../partitions.js';
import { TRANSACTION_PARTITIONS } from '../retention/time-tables.js';
import { streamPage, type StreamWindow } from '../paging.js';
import { prepared } from '../prepared.js';

export interface TransactionRecord {
  id: string; timestamp: Date; path: string; statusCode: number; method: string; service: string;
}
interface TransactionRow { id: string; ts: Date; path: string; status_code: number; method: string; service: string }
const toTxn = (r: TransactionRow): TransactionRecord =>
  ({ id: r.id, timestamp: r.ts, path: r.path, statusCode: r.status_code, method: r.method, service: r.service });

/**
 * The transaction log is written in batches off the request path (one INSERT per API call
 * would be a round trip of every request): calls are buffered and inserted together every FLUSH_MS or
 * FLUSH_ROWS, and reading the log flushes first, so a caller still sees its own call at once. A crash
 * loses at most the last FLUSH_MS of log lines (never data).
 */
export const FLUSH_MS = 200;
const FLUSH_ROWS = 500;
/** Lines kept for a retry while the database cannot take them; beyond this the oldest go (a log, not data). */
const MAX_PENDING = 20 * FLUSH_ROWS;

type Row = Record<string, unknown>;

/**
 * One statement for any number of lines. A line whose application was deleted after the call is skipped (its log
 * would go with it), so it cannot make the batch fail and take the other applications' lines along.
 */
const INSERT_LINES = `
  INSERT INTO transactions (id, application_id, ts, path, status_code, method, service)
  SELECT r.id, r.application_id, r.ts, r.path, r.status_code, r.method, r.service
  FROM json_to_recordset(?::json) AS r(id uuid, application_id uuid, ts timestamptz, path text, status_code int, method text, service text)
  WHERE EXISTS (SELECT 1 FROM applications a WHERE a.id = r.application_id)`;

function logWriter(knex: Knex) {
  let pending: Row[] = [];
  let timer: NodeJS.Timeout | null = null;
  let writing: Promise<void> = Promise.resolve();
  const schedule = () => {
    if (!timer) { timer = setTimeout(() => { void flush(); }, FLUSH_MS); timer.unref(); }
  };
  const flush = (): Promise<void> => {
    if (timer) { clearTimeout(timer); timer = null; }
    if (!pending.length) return writing;
    const rows = pending;
    pending = [];
    writing = writing.then(async () => {
      await ensurePartitions(knex, TRANSACTION_PARTITIONS, rows.map((r) => r.ts as Date));
      await prepared(knex, INSERT_LINES, [JSON.stringify(rows)]);
    }).then(() => undefined, () => {
      // the database is unreachable: the lines wait for the next flush, ahead of newer ones (bounded)
      pending = [...rows, ...pending].slice(-MAX_PENDING);
      schedule();
    });
    return writing;
  };
  return {
    add(row: Row): void {
      pending.push(row);
      if (pending.length >= FLUSH_ROWS) void flush();
      else schedule();
    },
    flush,
  };
}

export function transactionsRepository(knex: Knex) {
  const writer = logWriter(knex);
  const window = (trx: Knex, applicationId: string, w: { since?: Date; until: Date }) => {
    const q = trx('transactions').where('application_id', applicationId).where('ts', '<=', w.until);
    return w.since ? q.where('ts', '>', w.since) : q;
  };
  return {
    /** Buffers the line (see FLUSH_MS); inside a transaction it is written with it. */
    async record(t: Omit<TransactionRecord, 'id'> & { applicationId: string }, trx: Knex = knex): Promise<void> {
      const row = {
        id: randomUUID(), application_id: t.applicationId, ts: t.timestamp, path: t.path,
        status_code: t.statusCode, method: t.method, service: t.service,
      };
      if (trx === knex) writer.add(row);
      else {
        await ensurePartitions(trx, TRANSACTION_PARTITIONS, [t.timestamp]);
        await trx('transactions').insert(row);
      }
    },

    /** Writes the buffered lines now (before reading the log, and when the API closes). */
    flush: (): Promise<void> => writer.flush(),

    async list(applicationId: string, w: StreamWindow, trx: Knex = knex) {
      await writer.flush();
      const page = await streamPage<TransactionRow>(
        () => trx('transactions').select('id', 'ts', 'path', 'status_code', 'method', 'service').where('application_id', applicationId),
        'ts', w);
      return { remaining: page.remaining, prior: page.prior, newest: page.newest, transactions: page.rows.map(toTxn) };
    },

    /** meta.stats: counts in the requested period, per service, and of all time. */
    async stats(applicationId: string, w: { since?: Date; until: Date }, trx: Knex = knex) {
      await writer.flush();
      const usage = await window(trx, applicationId, w).select('service').count({ n: '*' }).groupBy('service');
      const [{ n: allTime }] = await trx('transactions').where('application_id', applicationId).count({ n: '*' });
      const serviceUsage: Record<string, number> = {};
      let periodTotal = 0;
      for (const r of usage as { service: string; n: number | string }[]) { serviceUsage[r.service] = Number(r.n); periodTotal += Number(r.n); }
      return { periodTotal, allTimeTotal: Number(allTime), serviceUsage };
    },
  };
}
