import type { LinkBuilder } from '../../context.js';
import type { EventRecord } from '../../../db/repositories/events.repository.js';
import type { Subscription } from '../../../db/repositories/subscriptions.repository.js';
import type { NotificationRecord } from '../../../db/repositories/notifications.repository.js';
import { iso } from '../../../lib/time.js';
import { presentEvent } from '../events/events.presenters.js';

/*
 * Pure functions (no Fastify): the notification worker uses them too, so the event and the
 * subscription in a delivered payload are exactly what the API shows.
 */

/**
 * Subscription: object and appData are always present, null when unset; `delivery` (added to the original
 * platform's fields) is how its receiver has been answering and whether it is paused.
 */
export function presentSubscription(links: LinkBuilder, s: Subscription) {
  const d = s.delivery;
  return {
    id: s.id, deviceId: s.deviceId, eventType: s.eventType, url: s.url,
    object: s.object ? { id: s.object.id, type: s.object.type } : null,
    appData: s.appData, createdAt: iso(s.createdAt)!, updatedAt: iso(s.updatedAt)!,
    delivery: {
      state: d.pausedAt ? 'paused' as const : 'active' as const, consecutiveFailures: d.consecutiveFailures,
      failingSince: iso(d.failingSince), pausedAt: iso(d.pausedAt),
    },
    links: {
      self: links.url('event', `/api/v1/subscriptions/${s.id}`),
      notifications: links.url('event', `/api/v1/subscriptions/${s.id}/notifications`),
    },
  };
}

/**
 * The exact text POSTed for a notification (docs/concepts/rules-events-webhooks.md): `{"notification":{"id":…,"event":…,"subscription":…}}`,
 * the event as GET /events/{id} shows it (with stored and storageLatency) and the subscription as
 * GET /subscriptions/{id} shows it (with appData). `id` (added to the original platform's shape) is the
 * notification's, the same on every attempt: receivers drop duplicate deliveries by it.
 */
export function notificationPayload(links: LinkBuilder, event: EventRecord, subscription: Subscription, notificationId: string): string {
  return JSON.stringify({
    notification: { id: notificationId, event: presentEvent(links, event), subscription: presentSubscription(links, subscription) },
  });
}

/**
 * Notification (spec 3.1): `complete` and `error` are final; a delivery that failed and will be tried again stays
 * `queued`. responseCode, response, notifiedAt and respondedAt once an attempt was made (the latest attempt's);
 * nextAttemptAt while queued for a retry (null while its subscription is paused).
 */
export function presentNotification(links: LinkBuilder, n: NotificationRecord) {
  const attempted = n.state === 'complete' || n.state === 'error' || n.attempts > 0;
  return {
    id: n.id, eventId: n.eventId, eventType: n.eventType, eventTimestamp: iso(n.eventTimestamp)!,
    subscriptionId: n.subscriptionId, url: n.url, payload: n.payload, state: n.state,
    ...(attempted ? {
      responseCode: n.responseCode, response: n.response, notifiedAt: iso(n.notifiedAt), respondedAt: iso(n.respondedAt),
    } : {}),
    ...(n.state === 'queued' && n.attempts > 0 ? { nextAttemptAt: iso(n.nextAttemptAt) } : {}),
    createdAt: iso(n.createdAt)!, attempts: n.attempts,
    links: {
      self: links.url('event', `/api/v1/notifications/${n.id}`),
      event: links.url('event', `/api/v1/events/${n.eventId}`),
      subscription: links.url('event', `/api/v1/subscriptions/${n.subscriptionId}`),
    },
  };
}
