import type { Knex } from 'knex';

/**
 * The notifications of newly stored events (spec 3.1), in the caller's transaction: one
 * INSERT … SELECT makes a `created` notification per matching subscription, and one UPDATE places
 * them in the queue (`queued`, due now). An event matches a subscription of its device whose
 * application can still read the device, when the type is equal (or the subscription is `rule-*`
 * and the event a rule event), the subscription's object (if any) is the event's, and a rule event
 * belongs to the subscription's application.
 */
export async function createNotifications(trx: Knex, eventIds: string[]): Promise<number> {
  if (!eventIds.length) return 0;
  const now = new Date();
  const created = await trx.raw(`
    INSERT INTO notifications (id, event_id, subscription_id, application_id, device_id, url, state, created_at)
    SELECT gen_random_uuid(), e.id, s.id, s.application_id, s.device_id, s.url, 'created', ?
    FROM events e
    JOIN subscriptions s ON s.device_id = e.device_id
      AND (s.event_type = e.event_type OR (s.event_type = 'rule-*' AND e.event_type IN ('rule-enter', 'rule-leave')))
      AND (s.object_id IS NULL OR (s.object_type = e.object_type AND s.object_id = e.object_id))
      AND (e.application_id IS NULL OR e.application_id = s.application_id)
    JOIN applications ap ON ap.id = s.application_id
    JOIN authorizations au ON au.device_id = s.device_id AND au.application_id = s.application_id
    WHERE e.id = ANY(?::uuid[])
      AND (ap.kind = 'consumer' OR EXISTS (
        SELECT 1 FROM registrations r WHERE r.device_id = s.device_id AND r.application_id = s.application_id))
    RETURNING id`, [now, eventIds]);
  const ids = (created.rows as { id: string }[]).map((r) => r.id);
  if (ids.length) {
    await trx.raw(`UPDATE notifications SET state = 'queued', next_attempt_at = ? WHERE id = ANY(?::uuid[]) AND state = 'created'`,
      [now, ids]);
  }
  return ids.length;
}
