import type { Knex } from 'knex';

/**
 * The SQL statements `knex` receives while `fn` runs (the set-based and per-request cost tests count them),
 * with `fn`'s result. `only` keeps the statements it matches (e.g. a stage's own, not BEGIN/COMMIT).
 */
export async function recordStatements<T>(knex: Knex, fn: () => Promise<T>, only?: RegExp): Promise<{ result: T; sql: string[] }> {
  const sql: string[] = [];
  const onQuery = (q: { sql: string }) => { if (!only || only.test(q.sql)) sql.push(q.sql); };
  knex.on('query', onQuery);
  try {
    return { result: await fn(), sql };
  } finally {
    knex.off('query', onQuery);
  }
}
