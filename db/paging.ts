import type { Knex } from 'knex';

export interface StreamWindow { since?: Date; until: Date; limit: number }
export interface StreamPage<T> { rows: T[]; remaining: number }

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
 * the newer records, read by the page's own statement), or null: streamPage then counts them, capped. Used only for
 * windows without `since`. `rows`: the page as it will be answered (every record from its oldest one's millisecond to
 * `until`), with whatever else the page's statement selected.
 */
export type ExactRemaining = (rows: readonly Record<string, unknown>[]) => number | null;

/**
 * Stream (time-series) paging, newest first (docs/reference/rest-api.md#pagination): `since` exclusive,
 * `until` inclusive; `remaining` counts the matches the `prior` link (until = last − 1 ms) reaches.
 * Timestamps are stored to the millisecond, so records sharing the last item's millisecond would be
 * skipped by that link: a page never ends inside a millisecond. It ends before it instead (fewer
 * than `limit` items), or, when one millisecond holds the whole page, takes all of that millisecond.
 * `base` must be a fresh builder factory so the page and the count do not share state.
 */
export async function streamPage<T>(
  base: () => Knex.QueryBuilder, tsColumn: string, w: StreamWindow, idColumn = 'id', exactRemaining?: ExactRemaining,
): Promise<StreamPage<T>> {
  const key = tsColumn.split('.').pop()!;
  const bounded = (until: Date) => {
    const q = base().where(tsColumn, '<=', until);
    return w.since ? q.where(tsColumn, '>', w.since) : q;
  };
  const order = [{ column: tsColumn, order: 'desc' as const }, { column: idColumn, order: 'desc' as const }];
  let rows = (await bounded(w.until).orderBy(order).limit(w.limit + 1)) as Record<string, unknown>[];
  if (rows.length <= w.limit) return { rows: rows as T[], remaining: 0 };
  const boundary = msOf(rows[w.limit - 1][key]);
  const splits = msOf(rows[w.limit][key]) === boundary;
  rows = rows.slice(0, w.limit);
  if (splits) {
    const before = rows.filter((r) => msOf(r[key]) !== boundary);
    rows = before.length ? before
      : (await bounded(w.until).where(tsColumn, '>=', new Date(boundary)).orderBy(order)) as Record<string, unknown>[];
  }
  const priorUntil = new Date(msOf(rows[rows.length - 1][key]) - 1);
  const exact = exactRemaining && !w.since ? exactRemaining(rows) : null;
  if (exact !== null) return { rows: rows as T[], remaining: exact };
  const capped = bounded(priorUntil).clearSelect().select(tsColumn).limit(REMAINING_CAP);
  const [{ n }] = await freshBuilder(capped).from(capped.as('r')).count({ n: '*' });
  return { rows: rows as T[], remaining: Number(n) };
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
