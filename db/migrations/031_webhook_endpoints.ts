import type { Knex } from 'knex';
import { runStatements } from '../sql.js';

/**
 * A receiver's origin (scheme://host[:port], lower case, no credentials, no default port) from a callback URL, as SQL
 * over `col`: what rows stored before this migration get, the same as `new URL(url).origin` (subscriptions.repository.ts
 * endpointOf) gives new ones for an ASCII URL. A URL with other characters (a host to write in punycode) gets its origin
 * from `new URL` itself first (backfillOrigins). Each `?` of the pattern is written `\\?`: knex takes a bare one for a
 * binding, even in a statement without any.
 */
const ORIGIN = (col: string) => `regexp_replace(regexp_replace(lower(substring(${col} from '^[A-Za-z][A-Za-z0-9+.-]*://'))
  || lower(substring(${col} from '^[A-Za-z][A-Za-z0-9+.-]*://(\\?:[^@/\\?#]*@)\\?([^/\\?#]*)')),
  '^(http://.*):0*80$', '\\1'), '^(https://.*):0*443$', '\\1')`;

/** URLs holding more than printable ASCII (a host in Unicode, to write in punycode), per statement. */
const BACKFILL_BATCH = 500;

/**
 * The rows of `table` (under `where`) without an endpoint whose URL is not printable ASCII get the origin `new URL`
 * gives (what the code stores for new rows), in batches; a URL it cannot parse is left to ORIGIN.
 */
async function backfillOrigins(knex: Knex, table: string, where: (alias: string) => string): Promise<void> {
  for (let after = '';;) {
    const { rows } = await knex.raw(`SELECT DISTINCT url FROM ${table} t WHERE ${where('t')} AND endpoint = '' AND url !~ '^[ -~]*$'
      AND url > ? ORDER BY url LIMIT ${BACKFILL_BATCH}`, [after]);
    if (!rows.length) return;
    const origins = (rows as { url: string }[]).flatMap(({ url }) => {
      try { return [{ url, endpoint: new URL(url).origin }]; } catch { return []; }
    });
    await knex.raw(`UPDATE ${table} t SET endpoint = o.endpoint FROM json_to_recordset(?::json) AS o(url text, endpoint text)
      WHERE ${where('t')} AND t.endpoint = '' AND t.url = o.url`, [JSON.stringify(origins)]);
    after = rows[rows.length - 1].url;
  }
}

/**
 * Webhook endpoints: one receiver cannot hold up the others (workers/notifications/index.ts).
 * - `endpoint`, a receiver's origin, on subscriptions and on the notifications made from them (copied, as their url):
 *   the claim takes at most the endpoint limit's worth of each endpoint's due notifications (and of each application's),
 *   reading the due rows per application and endpoint through `notifications_application_endpoint_due`
 *   (application_id, endpoint, next_attempt_at, id). That index replaces the claim's
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
    ALTER TABLE notifications ADD COLUMN IF NOT EXISTS endpoint text NOT NULL DEFAULT '',
      ADD COLUMN IF NOT EXISTS paused boolean NOT NULL DEFAULT false;
    ALTER TABLE notifications ALTER COLUMN endpoint SET STATISTICS 10, ALTER COLUMN paused SET STATISTICS 10;
  `);
  await backfillOrigins(knex, 'subscriptions', () => 'true');
  await backfillOrigins(knex, 'notifications', (t) => `${t}.next_attempt_at IS NOT NULL`);
  await runStatements(knex, `
    UPDATE subscriptions SET endpoint = ${ORIGIN('url')} WHERE endpoint = '';
    UPDATE notifications SET endpoint = ${ORIGIN('url')} WHERE next_attempt_at IS NOT NULL AND endpoint = '';
    CREATE INDEX IF NOT EXISTS notifications_application_endpoint_due ON notifications (application_id, endpoint, next_attempt_at, id)
      WHERE next_attempt_at IS NOT NULL;
    DROP INDEX IF EXISTS notifications_endpoint_due;
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
    DROP INDEX IF EXISTS notifications_application_endpoint_due;
    ALTER TABLE notifications DROP COLUMN IF EXISTS paused, DROP COLUMN IF EXISTS endpoint;
    ALTER TABLE subscriptions DROP COLUMN IF EXISTS paused_at, DROP COLUMN IF EXISTS failing_since,
      DROP COLUMN IF EXISTS consecutive_failures, DROP COLUMN IF EXISTS endpoint;
  `);
}
