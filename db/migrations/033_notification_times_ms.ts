import type { Knex } from 'knex';
import { runStatements } from '../sql.js';

/**
 * Notifications of rule events were made with their event's `stored` time to the microsecond on PostgreSQL, while
 * stream pages, and the cursors of their prior links, are to the millisecond: records with microseconds between two
 * pages' bounds were skipped. New ones are made to the millisecond; this cuts those already stored (rows already whole
 * milliseconds are left as they are).
 */
export async function up(knex: Knex): Promise<void> {
  await runStatements(knex, `
    UPDATE notifications SET created_at = date_trunc('milliseconds', created_at)
    WHERE created_at <> date_trunc('milliseconds', created_at);
  `);
}

/** The microseconds are gone; nothing to undo. */
export async function down(): Promise<void> {}
