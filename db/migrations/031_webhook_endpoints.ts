import type { Knex } from 'knex';
import { runStatements } from '../sql.js';

/**
 * A receiver's origin (scheme://host[:port], lower case, no credentials) from a callback URL, as SQL over `col`: what
 * rows stored before this migration get. New ones get the URL's origin as the subscriptions repository computes it.
 * Each `?` of the pattern is written `\\?`: knex takes a bare one for a binding, even in a statement without any.
 */
const ORIGIN = (col: string) => `lower(substring(${col} from '^[A-Za-z][A-Za-z0-9+.-]*://'))
  || lower(substring(${col} from '^[A-Za-z][A-Za-z0-9+.-]*://(\\?:[^@/\\?#]*@)\\?([^/\\?#]*)'))`;

/**
 * Webhook endpoints: one receiver cannot hold up the others (workers/notifications/index.ts).
 * - `endpoint`, a receiver's origin, on subscriptions and on the notifications made from them (copied, as their url):
 *   the claim takes at most the endpoint limit's worth of each endpoint's due notifications, reading the due rows per
 *   endpoint through `notifications_endpoint_due` (endpoint, next_attempt_at, id). That index replaces the claim's
 *   previous one in (next_attempt_at, id) order (migration 015): in that order a backlog of a slow endpoint ahead of the
 *   others had to be read through at every claim. Neither holds `locked_until`, so a lease stays a HOT update
 *   (migration 020).
 * - A subscription's delivery state: its consecutive failed attempts, since when, and when it was paused. A paused
 *   subscription's pending notifications are kept with `paused` set and no next attempt (out of the due index), and
 *   are due again when it is resumed (`notifications_paused` finds them).
 * - The two new columns of the growing `notifications` table get a small sample, as its others (migration 023).
 * Safe to re-run: every step is conditional or idempotent.
 */
export async function up(knex: Knex): Promise<void> {
  await runStatements(knex, `
    ALTER TABLE subscriptions ADD COLUMN IF NOT EXISTS endpoint text NOT NULL DEFAULT '',
      ADD COLUMN IF NOT EXISTS consecutive_failures integer NOT NULL DEFAULT 0,
      ADD COLUMN IF NOT EXISTS failing_since timestamptz,
      ADD COLUMN IF NOT EXISTS paused_at timestamptz;
    UPDATE subscriptions SET endpoint = ${ORIGIN('url')} WHERE endpoint = '';
    ALTER TABLE notifications ADD COLUMN IF NOT EXISTS endpoint text NOT NULL DEFAULT '',
      ADD COLUMN IF NOT EXISTS paused boolean NOT NULL DEFAULT false;
    ALTER TABLE notifications ALTER COLUMN endpoint SET STATISTICS 10, ALTER COLUMN paused SET STATISTICS 10;
    UPDATE notifications SET endpoint = ${ORIGIN('url')} WHERE next_attempt_at IS NOT NULL AND endpoint = '';
    CREATE INDEX IF NOT EXISTS notifications_endpoint_due ON notifications (endpoint, next_attempt_at, id)
      WHERE next_attempt_at IS NOT NULL;
    CREATE INDEX IF NOT EXISTS notifications_paused ON notifications (subscription_id) WHERE paused;
    DROP INDEX IF EXISTS notifications_due_order;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await runStatements(knex, `
    CREATE INDEX IF NOT EXISTS notifications_due_order ON notifications (next_attempt_at, id) WHERE next_attempt_at IS NOT NULL;
    UPDATE notifications SET next_attempt_at = now(), paused = false WHERE paused;
    DROP INDEX IF EXISTS notifications_paused;
    DROP INDEX IF EXISTS notifications_endpoint_due;
    ALTER TABLE notifications DROP COLUMN IF EXISTS paused, DROP COLUMN IF EXISTS endpoint;
    ALTER TABLE subscriptions DROP COLUMN IF EXISTS paused_at, DROP COLUMN IF EXISTS failing_since,
      DROP COLUMN IF EXISTS consecutive_failures, DROP COLUMN IF EXISTS endpoint;
  `);
}
