import type { Knex } from 'knex';

/** A statement as knex sent it: its SQL and its bindings. */
export interface SentStatement { sql: string; bindings: readonly unknown[] }

/**
 * The SQL statements `knex` receives while `fn` runs (the set-based and per-request cost tests count them),
 * with `fn`'s result; `sent` has each with its bindings, to run it again (e.g. under EXPLAIN). `only` keeps the
 * statements it matches (e.g. a stage's own, not BEGIN/COMMIT).
 */
export async function recordStatements<T>(knex: Knex, fn: () => Promise<T>, only?: RegExp): Promise<{ result: T; sql: string[]; sent: SentStatement[] }> {
  const sent: SentStatement[] = [];
  const onQuery = (q: { sql: string; bindings?: readonly unknown[] }) => { if (!only || only.test(q.sql)) sent.push({ sql: q.sql, bindings: q.bindings ?? [] }); };
  knex.on('query', onQuery);
  try {
    const result = await fn();
    return { result, sql: sent.map((s) => s.sql), sent };
  } finally {
    knex.off('query', onQuery);
  }
}
