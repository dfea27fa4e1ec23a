import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { streamPage, type StreamWindow } from '../paging.js';

export interface TransactionRecord {
  id: string; timestamp: Date; path: string; statusCode: number; method: string; service: string;
}
const toTxn = (r: Record<string, any>): TransactionRecord =>
  ({ id: r.id, timestamp: r.ts, path: r.path, statusCode: r.status_code, method: r.method, service: r.service });

export function transactionsRepository(knex: Knex) {
  const window = (trx: Knex, applicationId: string, w: { since?: Date; until: Date }) => {
    const q = trx('transactions').where('application_id', applicationId).where('ts', '<=', w.until);
    return w.since ? q.where('ts', '>', w.since) : q;
  };
  return {
    async record(t: Omit<TransactionRecord, 'id'> & { applicationId: string }, trx: Knex = knex): Promise<void> {
      await trx('transactions').insert({
        id: randomUUID(), application_id: t.applicationId, ts: t.timestamp, path: t.path,
        status_code: t.statusCode, method: t.method, service: t.service,
      });
    },

    async list(applicationId: string, w: StreamWindow, trx: Knex = knex) {
      const page = await streamPage<Record<string, any>>(
        () => trx('transactions').select('id', 'ts', 'path', 'status_code', 'method', 'service').where('application_id', applicationId),
        'ts', w);
      return { remaining: page.remaining, transactions: page.rows.map(toTxn) };
    },

    /** meta.stats (spec 2.4): counts in the requested period, per service, and of all time. */
    async stats(applicationId: string, w: { since?: Date; until: Date }, trx: Knex = knex) {
      const usage = await window(trx, applicationId, w).select('service').count({ n: '*' }).groupBy('service');
      const [{ n: allTime }] = await trx('transactions').where('application_id', applicationId).count({ n: '*' });
      const serviceUsage: Record<string, number> = {};
      let periodTotal = 0;
      for (const r of usage as any[]) { serviceUsage[r.service] = Number(r.n); periodTotal += Number(r.n); }
      return { periodTotal, allTimeTotal: Number(allTime), serviceUsage };
    },
  };
}
