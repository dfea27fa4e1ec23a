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
  const built = claimed.flatMap((n) => (n.payload === null && n.sources
    ? [{ id: n.id, payload: notificationPayload(links, n.sources.event, n.sources.subscription, n.id) }] : []));
  const stored = await repos.notifications.storePayloads(built);
  return claimed.flatMap((n) => {
    const payload = n.payload ?? stored.get(n.id);
    return payload ? [{ ...n, payload }] : [];
  });
}
