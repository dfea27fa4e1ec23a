import type { Knex } from 'knex';
import { devicesDeleteHistory, HISTORY_014 } from './014_history_keys.js';
import { replaceKeyWithCascade, restoreKey, type StatementCascade } from './statement-cascade.js';

/**
 * Events and their notifications no longer check their parent row per inserted row (as 014 did for
 * messages). The foreign keys of `events.device_id` and `notifications.event_id` were two of the three per-row checks
 * that made most of an event's cost in the rules statement (docs/development/performance.md). Neither
 * guards anything the platform can get wrong: a notification's event is inserted by the same statement, and a
 * device's events are written only by the gateway for a device it has authenticated. What the keys did on delete is
 * kept, set-based: deleting events (a late frame's recomputation, in five statements) deletes their notifications in
 * one statement per DELETE, and deleting a device deletes its events. `notifications.subscription_id` keeps its key:
 * its row lock orders a notification against its subscription being deleted by the API at the same moment (until
 * migration 030, where the fan-out takes that lock itself).
 */
const NOTIFICATIONS: StatementCascade = { parent: 'events', child: 'notifications', column: 'event_id', trigger: 'events_delete_notifications' };

export async function up(knex: Knex): Promise<void> {
  await replaceKeyWithCascade(knex, NOTIFICATIONS);
  await knex.raw('ALTER TABLE events DROP CONSTRAINT IF EXISTS events_device_id_fkey');
  await knex.raw(devicesDeleteHistory([...HISTORY_014, 'events']));
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(devicesDeleteHistory(HISTORY_014));
  await knex.raw('ALTER TABLE events ADD CONSTRAINT events_device_id_fkey FOREIGN KEY (device_id) REFERENCES devices(id) ON DELETE CASCADE');
  await restoreKey(knex, NOTIFICATIONS);
}
