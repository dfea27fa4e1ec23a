import type { Knex } from 'knex';
import { runStatements } from '../sql.js';

/**
 * Subscriptions and notifications (docs/concepts/rules-events-webhooks.md). The notifications table is also the
 * delivery queue: a row is due when `next_attempt_at <= now()` and its lease `locked_until` is
 * absent or expired; workers claim due rows with `FOR UPDATE SKIP LOCKED`. Each HTTP attempt is
 * kept in notification_attempts. Deleting a subscription deletes its notifications.
 */
export async function up(knex: Knex): Promise<void> {
  await runStatements(knex, `
    CREATE TABLE IF NOT EXISTS subscriptions (
      id uuid PRIMARY KEY,
      application_id uuid NOT NULL REFERENCES applications(id) ON DELETE CASCADE,
      device_id uuid NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
      event_type text NOT NULL,
      url text NOT NULL,
      object_type text,
      object_id uuid,
      app_data text,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    );
    CREATE INDEX IF NOT EXISTS subscriptions_device_type ON subscriptions (device_id, event_type);
    CREATE INDEX IF NOT EXISTS subscriptions_app_device ON subscriptions (application_id, device_id, created_at DESC);
    CREATE TABLE IF NOT EXISTS notifications (
      id uuid PRIMARY KEY,
      event_id uuid NOT NULL REFERENCES events(id) ON DELETE CASCADE,
      subscription_id uuid NOT NULL REFERENCES subscriptions(id) ON DELETE CASCADE,
      application_id uuid NOT NULL,
      device_id uuid NOT NULL,
      url text NOT NULL,
      payload text,
      state text NOT NULL CHECK (state IN ('created', 'queued', 'complete', 'error')),
      attempts integer NOT NULL DEFAULT 0,
      response_code integer,
      response text,
      notified_at timestamptz,
      responded_at timestamptz,
      next_attempt_at timestamptz,
      locked_until timestamptz,
      created_at timestamptz NOT NULL
    );
    CREATE INDEX IF NOT EXISTS notifications_due ON notifications (next_attempt_at) WHERE next_attempt_at IS NOT NULL;
    CREATE INDEX IF NOT EXISTS notifications_subscription ON notifications (subscription_id, created_at DESC);
    CREATE INDEX IF NOT EXISTS notifications_event ON notifications (event_id, created_at DESC);
    CREATE TABLE IF NOT EXISTS notification_attempts (
      id uuid PRIMARY KEY,
      notification_id uuid NOT NULL REFERENCES notifications(id) ON DELETE CASCADE,
      attempt integer NOT NULL,
      outcome text NOT NULL CHECK (outcome IN ('complete', 'error')),
      response_code integer,
      response text,
      notified_at timestamptz NOT NULL,
      responded_at timestamptz,
      UNIQUE (notification_id, attempt)
    );
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS notification_attempts, notifications, subscriptions CASCADE');
}
