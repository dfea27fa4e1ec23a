import type { Knex } from 'knex';

/**
 * Where a stream page's window ends, newest side: records dated at or before `until`; with `before` (an id), of the
 * records dated exactly `until` only those whose id sorts before it. The `prior` link of a page is one of these.
 */
export interface StreamCursor { until: Date; before?: string }
export interface StreamWindow extends StreamCursor { since?: Date; limit: number }
/**
 * `prior`: where the next older page ends, or null when nothing older matches (no `prior` link); `newest`: the first
 * record's time (an answer without `until` reports it when it is ahead of the wall clock).
 */
export interface StreamPage<T> { rows: T[]; remaining: number; prior: StreamCursor | null; newest: Date | null }

const msOf = (v: unknown) => new Date(v as Date).getTime();

/**
 * `remaining` is counted exactly up to this many records and reported as this number beyond it:
 * counting a device's whole history on every page would cost more the longer the history. Clients follow `prior` until
 * it is absent; the count only says roughly how far they are. A device's messages without `since` are exact at any size
 * (ExactRemaining: a stored total less the newer ones).
 */
export const REMAINING_CAP = 10_000;

/**
 * The number of records the page's prior link reaches when it can be had without counting them (a stored total less
 * the records above the window and the page's own, read by the page's own statement), or null: streamPage then
 * counts them, capped. Used only for windows without `since`. `rows`: the page as it will be answered (at most
 * `limit` records), with whatever else the page's statement selected. Every record the prior link does not reach is
 * either above the window (newer than `until`, or dated `until` with an id at or after `before`) or on the page.
 */
export type ExactRemaining = (rows: readonly Record<string, unknown>[]) => number | null;

/**
 * Stream (time-series) paging, newest first (docs/reference/rest-api.md#pagination): `since` exclusive,
 * `until` inclusive, in the total order timestamp desc, id desc; a page holds at most `limit` records.
 * Timestamps are stored to the millisecond. The prior cursor is the spec's `until` = last − 1 ms when the next older
 * record is in an earlier millisecond than the page's last; when the page ends inside a millisecond it is
 * `until` = the last one's millisecond and `before` = its id, so following it neither repeats nor skips a record.
 * `remaining` counts the records that cursor reaches (capped, REMAINING_CAP).
 * `base` must be a fresh builder factory so the page and the count do not share state.
 */
export async function streamPage<T>(
  base: () => Knex.QueryBuilder, tsColumn: string, w: StreamWindow, idColumn = 'id', exactRemaining?: ExactRemaining,
): Promise<StreamPage<T>> {
  const key = tsColumn.split('.').pop()!;
  const idKey = idColumn.split('.').pop()!;
  // `ts <= until` bounds the index range; the id test only drops the records of `until`'s own millisecond at or
  // after the cursor
  const bounded = (upper: StreamCursor) => {
    const q = base().where(tsColumn, '<=', upper.until);
    if (upper.before !== undefined) {
      const { until, before } = upper;
      q.where((b) => b.where(tsColumn, '<', until).orWhere(idColumn, '<', before));
    }
    return w.since ? q.where(tsColumn, '>', w.since) : q;
  };
  const order = [{ column: tsColumn, order: 'desc' as const }, { column: idColumn, order: 'desc' as const }];
  const fetched = (await bounded(w).orderBy(order).limit(w.limit + 1)) as Record<string, unknown>[];
  const newest = fetched.length ? new Date(msOf(fetched[0][key])) : null;
  if (fetched.length <= w.limit) return { rows: fetched as T[], remaining: 0, prior: null, newest };
  const rows = fetched.slice(0, w.limit);
  const last = rows[w.limit - 1];
  const lastMs = msOf(last[key]);
  if (last[idKey] === undefined || last[idKey] === null) throw new Error(`streamPage: the page does not select ${idColumn}`);
  const prior: StreamCursor = msOf(fetched[w.limit][key]) < lastMs
    ? { until: new Date(lastMs - 1) }
    : { until: new Date(lastMs), before: String(last[idKey]) };
  const exact = exactRemaining && !w.since ? exactRemaining(rows) : null;
  if (exact !== null) return { rows: rows as T[], remaining: exact, prior, newest };
  const capped = bounded(prior).clearSelect().select(tsColumn).limit(REMAINING_CAP);
  const [{ n }] = await freshBuilder(capped).from(capped.as('r')).count({ n: '*' });
  return { rows: rows as T[], remaining: Number(n), prior, newest };
}

/** An empty builder on the same connection or transaction as `q`. */
const freshBuilder = (q: Knex.QueryBuilder): Knex.QueryBuilder =>
  (q as unknown as { client: { queryBuilder(): Knex.QueryBuilder } }).client.queryBuilder();

export interface OffsetWindow { offset: number; limit: number }
export interface OffsetPage<T> { rows: T[]; total: number }

export async function offsetPage<T>(
  base: () => Knex.QueryBuilder, order: { column: string; order: 'asc' | 'desc' }[], w: OffsetWindow,
): Promise<OffsetPage<T>> {
  const [{ n }] = await base().clearSelect().count({ n: '*' });
  const rows = (await base().orderBy(order).offset(w.offset).limit(w.limit)) as T[];
  return { rows, total: Number(n) };
}
