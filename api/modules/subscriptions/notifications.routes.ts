import type { App } from '../../context.js';
import { Type } from 'typebox';
import { NotFound } from '../../../lib/errors.js';
import { errorResponses, StreamQuery } from '../../schemas/common.js';
import { streamList } from '../../plugins/pagination.js';
import type { NotificationRecord } from '../../../db/repositories/notifications.repository.js';
import { presentNotification } from './subscriptions.presenters.js';
import {
  EventIdParams, NotificationIdParams, NotificationList, NotificationResponse, SubscriptionIdParams,
} from './subscriptions.schemas.js';

/**
 * Notification reads: the calling application's own only. Lists use stream pagination on createdAt, newest first
 * (docs/reference/rest-api.md#pagination).
 */
export default async function notificationsRoutes(app: App) {
  const { repos } = app.deps;
  const config = { service: 'event' as const };
  const tags = ['event'];
  const notifications = {
    service: 'event', key: 'notifications', present: (n: NotificationRecord) => presentNotification(app.links, n),
  } as const;

  app.get('/api/v1/notifications/:notificationId', {
    config,
    schema: {
      tags, summary: 'One notification', params: NotificationIdParams,
      response: { 200: NotificationResponse, ...errorResponses(404) },
    },
  }, async (request) => {
    const { notificationId } = request.params;
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
    const { subscriptionId } = request.params;
    if (!(await repos.subscriptions.get(request.principal!, subscriptionId))) throw new NotFound();
    return streamList(app.links, request.query, {
      ...notifications, path: `/api/v1/subscriptions/${subscriptionId}/notifications`,
      load: (w) => repos.notifications.listForSubscription(request.principal!, subscriptionId, w),
    });
  });

  app.get('/api/v1/events/:eventId/notifications', {
    config,
    schema: {
      tags, summary: "The application's notifications of an event, newest first", params: EventIdParams,
      querystring: Type.Object(StreamQuery), response: { 200: NotificationList, ...errorResponses(404) },
    },
  }, async (request) => {
    const { eventId } = request.params;
    if (!(await repos.notifications.eventVisible(request.principal!, eventId))) throw new NotFound();
    return streamList(app.links, request.query, {
      ...notifications, path: `/api/v1/events/${eventId}/notifications`,
      load: (w) => repos.notifications.listForEvent(request.principal!, eventId, w),
    });
  });
}
