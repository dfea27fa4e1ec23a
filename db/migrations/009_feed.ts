import type { Knex } from 'knex';
import { runStatements } from '../sql.js';

/**
 * The live-stream feed across processes (db/message-feed.ts; docs/operations/scale-out.md).
 * - `message_feed_seq`: one row whose counter each ingest batch increments at the end of its transaction.
 *   The row lock is held until commit, so numbers are handed out in commit order and without gaps (a
 *   rolled-back batch gives its number back): when batch N is visible, every batch before it is too.
 * - `message_feed`: one row per ingest batch, keyed by that batch number, with the ids of its messages and
 *   of their devices (arrays, so the feed adds one row per batch to the ingest path, not one per message);
 *   an API process that does not run the gateway reads `seq > last seen`. The writers prune old batches.
 * - `deployment_urls`: the public URLs of the deployment as the parts that serve them announce them
 *   (`api`: an API part's public URL, `mqtt`: a gateway's public MQTT URL), so the other parts, on any host,
 *   build links with the one API URL and connect simulator dummies to the platform's own gateway.
 */
export async function up(knex: Knex): Promise<void> {
  await runStatements(knex, `
    CREATE TABLE IF NOT EXISTS message_feed_seq (
      id boolean PRIMARY KEY DEFAULT true CHECK (id),
      seq bigint NOT NULL
    );
    INSERT INTO message_feed_seq (id, seq) VALUES (true, 0) ON CONFLICT DO NOTHING;
    CREATE TABLE IF NOT EXISTS message_feed (
      seq bigint PRIMARY KEY,
      message_ids uuid[] NOT NULL,
      device_ids uuid[] NOT NULL,
      committed_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE TABLE IF NOT EXISTS deployment_urls (
      kind text PRIMARY KEY CHECK (kind IN ('api', 'mqtt')),
      url text NOT NULL,
      updated_at timestamptz NOT NULL DEFAULT now()
    );
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS message_feed, message_feed_seq, deployment_urls');
}
