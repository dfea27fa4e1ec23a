import type { Config } from '../../lib/config.js';
import { linksForConfig } from '../../lib/links.js';
import type { Repositories } from '../../db/index.js';
import type { ClaimedNotification } from '../../db/repositories/notifications.repository.js';
import type { LinkBuilder } from '../../api/context.js';
import { notificationPayload } from '../../api/modules/subscriptions/subscriptions.presenters.js';

export interface ReadyNotification extends ClaimedNotification { payload: string }

/** Links in payloads follow the API's rule for link bases (lib/links.ts). */
export const linksFromConfig = (config: Config): LinkBuilder => linksForConfig(config);

/**
 * The payload is built when a notification is first claimed and stored before the first POST;
 * every attempt posts the stored text, so `payload` is byte for byte the body received.
 * Notifications whose event or subscription has just been deleted are dropped from the batch.
 */
export async function ensurePayloads(repos: Repositories, links: LinkBuilder, claimed: ClaimedNotification[]): Promise<ReadyNotification[]> {
  const missing = claimed.filter((n) => n.payload === null);
  let stored = new Map<string, string>();
  if (missing.length) {
    const { events, subscriptions } = await repos.notifications.payloadSources(missing);
    const built = missing.flatMap((n) => {
      const event = events.get(n.eventId);
      const subscription = subscriptions.get(n.subscriptionId);
      return event && subscription ? [{ id: n.id, payload: notificationPayload(links, event, subscription, n.id) }] : [];
    });
    stored = await repos.notifications.storePayloads(built);
  }
  return claimed.flatMap((n) => {
    const payload = n.payload ?? stored.get(n.id);
    return payload ? [{ ...n, payload }] : [];
  });
}
