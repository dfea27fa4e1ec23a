import type { Knex } from 'knex';

export interface StreamWindow { since?: Date; until: Date; limit: number }
export interface StreamPage<T> { rows: T[]; remaining: number }

/**
 * Stream (time-series) paging, newest first (spec 2.1, reference-notes §3.3): `since` exclusive,
 * `until` inclusive; `remaining` counts the matches the `prior` link (until = last − 1 ms) would reach.
 * `base` must be a fresh builder factory so the page and the count do not share state.
 */
export async function streamPage<T>(
  base: () => Knex.QueryBuilder, tsColumn: string, w: StreamWindow, idColumn = 'id',
): Promise<StreamPage<T>> {
  const bounded = (until: Date) => {
    const q = base().where(tsColumn, '<=', until);
    return w.since ? q.where(tsColumn, '>', w.since) : q;
  };
  const rows = (await bounded(w.until).orderBy([{ column: tsColumn, order: 'desc' }, { column: idColumn, order: 'desc' }])
    .limit(w.limit)) as T[];
  if (rows.length < w.limit) return { rows, remaining: 0 };
  const last = (rows[rows.length - 1] as Record<string, unknown>)[tsColumn.split('.').pop()!] as Date;
  const priorUntil = new Date(new Date(last).getTime() - 1);
  const [{ n }] = await bounded(priorUntil).clearSelect().count({ n: '*' });
  return { rows, remaining: Number(n) };
}

export interface OffsetWindow { offset: number; limit: number }
export interface OffsetPage<T> { rows: T[]; total: number }

export async function offsetPage<T>(
  base: () => Knex.QueryBuilder, order: { column: string; order: 'asc' | 'desc' }[], w: OffsetWindow,
): Promise<OffsetPage<T>> {
  const [{ n }] = await base().clearSelect().count({ n: '*' });
  const rows = (await base().orderBy(order).offset(w.offset).limit(w.limit)) as T[];
  return { rows, total: Number(n) };
}
