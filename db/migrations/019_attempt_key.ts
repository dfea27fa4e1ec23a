import type { Knex } from 'knex';
import { replaceKeyWithCascade, restoreKey, type StatementCascade } from './statement-cascade.js';

/**
 * Recorded attempts no longer check their notification per inserted row (as 017 and 018 did):
 * `notification_attempts_notification_id_fkey` ran a check for each attempt recorded. The check guarded nothing the
 * statement had not already: it inserts an attempt only for a notification its own UPDATE returned, and that UPDATE
 * holds the row's lock to the commit, so the notification cannot be deleted in between. What the key did on delete is
 * kept, set-based: deleting notifications (with their event, their subscription or their device) deletes their
 * attempts in one statement per DELETE.
 */
const ATTEMPTS: StatementCascade = { parent: 'notifications', child: 'notification_attempts', column: 'notification_id', trigger: 'notifications_delete_attempts' };

export async function up(knex: Knex): Promise<void> {
  await replaceKeyWithCascade(knex, ATTEMPTS);
}

export async function down(knex: Knex): Promise<void> {
  await restoreKey(knex, ATTEMPTS);
}
