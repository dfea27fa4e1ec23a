import type { Knex } from 'knex';
import { replaceKeyWithCascade, restoreKey, type StatementCascade } from './statement-cascade.js';

/**
 * A notification no longer checks its subscription per inserted row (as 017 did for its event): the key's
 * check ran an SPI query and key-share locked the subscription for every notification
 * (docs/development/performance.md). The lock is what 017 kept the key for (it orders a notification against its
 * subscription being deleted at the same moment), and the fan-out now takes it itself
 * (db/repositories/notification-fanout.ts: FOR KEY SHARE of the subscriptions it notifies): a delete waits for the
 * batch that notified, and a subscription deleted since the batch's snapshot is not locked and gets no notification.
 * What the key did on delete is kept, set-based: deleting subscriptions (through the API, or with their device) deletes
 * their notifications in one statement per DELETE (and those their attempts, migration 019).
 */
const NOTIFICATIONS: StatementCascade = {
  parent: 'subscriptions', child: 'notifications', column: 'subscription_id', trigger: 'subscriptions_delete_notifications',
};

export async function up(knex: Knex): Promise<void> {
  await replaceKeyWithCascade(knex, NOTIFICATIONS);
}

export async function down(knex: Knex): Promise<void> {
  await restoreKey(knex, NOTIFICATIONS);
}
