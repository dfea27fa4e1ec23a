import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { NotFound } from '../../../lib/errors.js';
import { errorResponses, StreamQuery } from '../../schemas/common.js';
import { parseStreamWindow, streamMeta } from '../../plugins/pagination.js';
import type { NotificationRecord } from '../../../db/repositories/notifications.repository.js';
import { presentNotification } from './subscriptions.presenters.js';
import {
  EventIdParams, NotificationIdParams, NotificationList, NotificationResponse, SubscriptionIdParams,
} from './subscriptions.schemas.js';

/**
 * Notification reads (spec 4.5): the calling application's own only. Lists use stream pagination
 * on createdAt, newest first (spec 2.1 names notifications among the stream-paginated lists).
 */
export default async function notificationsRoutes(app: FastifyInstance) {
  const { repos } = app.deps;
  const config = { service: 'event' as const };
  const tags = ['event'];
  const list = async (path: string, query: unknown, load: (w: ReturnType<typeof parseStreamWindow>) =>
    Promise<{ remaining: number; notifications: NotificationRecord[] }>) => {
    const w = parseStreamWindow(query as Record<string, string>);
    const page = await load(w);
    return {
      notifications: page.notifications.map((n) => presentNotification(app.links, n)),
      meta: streamMeta(app.links, 'event', path, w,
        { remaining: page.remaining, lastTimestamp: page.notifications.at(-1)?.createdAt ?? null }),
    };
  };

  app.get('/api/v1/notifications/:notificationId', {
    config,
    schema: {
      tags, summary: 'One notification', params: NotificationIdParams,
      response: { 200: NotificationResponse, ...errorResponses(404) },
    },
  }, async (request) => {
    const { notificationId } = request.params as { notificationId: string };
    const notification = await repos.notifications.get(request.principal!, notificationId);
    if (!notification) throw new NotFound();
    return { notification: presentNotification(app.links, notification) };
  });

  app.get('/api/v1/subscriptions/:subscriptionId/notifications', {
    config,
    schema: {
      tags, summary: 'Notifications of a subscription, newest first', params: SubscriptionIdParams,
      querystring: Type.Object(StreamQuery), response: { 200: NotificationList, ...errorResponses(404) },
    },
  }, async (request) => {
    const { subscriptionId } = request.params as { subscriptionId: string };
    if (!(await repos.subscriptions.get(request.principal!, subscriptionId))) throw new NotFound();
    return list(`/api/v1/subscriptions/${subscriptionId}/notifications`, request.query,
      (w) => repos.notifications.listForSubscription(request.principal!, subscriptionId, w));
  });

  app.get('/api/v1/events/:eventId/notifications', {
    config,
    schema: {
      tags, summary: "The application's notifications of an event, newest first", params: EventIdParams,
      querystring: Type.Object(StreamQuery), response: { 200: NotificationList, ...errorResponses(404) },
    },
  }, async (request) => {
    const { eventId } = request.params as { eventId: string };
    if (!(await repos.notifications.eventVisible(request.principal!, eventId))) throw new NotFound();
    return list(`/api/v1/events/${eventId}/notifications`, request.query,
      (w) => repos.notifications.listForEvent(request.principal!, eventId, w));
  });
}
