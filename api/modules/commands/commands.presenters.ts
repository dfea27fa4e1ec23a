import type { LinkBuilder } from '../../context.js';
import type { Command } from '../../../db/commands/commands.repository.js';
import { iso } from '../../../lib/time.js';

export function presentCommand(links: LinkBuilder, c: Command) {
  return {
    id: c.id, deviceId: c.deviceId, type: c.type, payload: c.payload, state: c.state,
    createdAt: c.createdAt.toISOString(), sentAt: iso(c.sentAt), deliveredAt: iso(c.deliveredAt), respondedAt: iso(c.respondedAt),
    expiresAt: c.expiresAt.toISOString(), response: c.response,
    links: {
      self: links.url('platform', `/api/v1/commands/${c.id}`),
      device: links.url('platform', `/api/v1/devices/${c.deviceId}`),
      events: links.url('event', `/api/v1/devices/${c.deviceId}/events?objectId=${c.id}`),
    },
  };
}
