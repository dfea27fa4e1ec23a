import type { Config } from '../../lib/config.js';
import { linksForConfig } from '../../lib/links.js';
import type { ClaimedNotification } from '../../db/repositories/notifications.repository.js';
import type { LinkBuilder } from '../../api/context.js';
import { notificationPayload } from '../../api/modules/subscriptions/subscriptions.presenters.js';

/** Links in payloads follow the API's rule for link bases (lib/links.ts). */
export const linksFromConfig = (config: Config): LinkBuilder => linksForConfig(config);

/**
 * A claimed notification with the body to POST, as UTF-8 bytes encoded once for the call and its record: the stored
 * payload (every retry posts the first attempt's text), or, for a first attempt (`firstPayload`), the payload built now
 * from its event and subscription, stored with that attempt's record, so the stored payload is byte for byte the body
 * the receiver got. Notifications whose event or subscription has just been deleted are dropped from the batch.
 */
export interface ReadyNotification extends ClaimedNotification { body: Buffer; firstPayload: boolean }

export function readyPayloads(links: LinkBuilder, claimed: ClaimedNotification[]): ReadyNotification[] {
  return claimed.flatMap((n): ReadyNotification[] => {
    if (n.payload !== null) return [{ ...n, body: Buffer.from(n.payload, 'utf8'), firstPayload: false }];
    if (!n.sources) return [];
    return [{ ...n, body: Buffer.from(notificationPayload(links, n.sources.event, n.sources.subscription, n.id), 'utf8'), firstPayload: true }];
  });
}
