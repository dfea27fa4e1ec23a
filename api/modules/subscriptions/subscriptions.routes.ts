import type { App } from '../../context.js';
import { NotFound } from '../../../lib/errors.js';
import { DeviceIdParams, errorResponses, NoContent } from '../../schemas/common.js';
import { offsetMeta, parseOffsetWindow } from '../../plugins/pagination.js';
import { presentSubscription } from './subscriptions.presenters.js';
import {
  CreateBody, ListQuery, SubscriptionIdParams, SubscriptionList, SubscriptionResponse, UpdateBody,
} from './subscriptions.schemas.js';
import { createSubscription, parseFilter, updateSubscription } from './subscriptions.service.js';
import notificationsRoutes from './notifications.routes.js';

/** Subscriptions (docs/concepts/rules-events-webhooks.md) and, registered from here, notification reads. */
export default async function subscriptionsRoutes(app: App) {
  const { repos, config: { allowPrivateWebhooks, maxSubscriptionsPerApplication } } = app.deps;
  const deps = { repos, allowPrivateWebhooks, maxSubscriptionsPerApplication };
  const config = { service: 'event' as const };
  const tags = ['event'];

  app.post('/api/v1/devices/:deviceId/subscriptions', {
    config,
    schema: {
      tags, summary: 'Subscribe to events of a device', params: DeviceIdParams, body: CreateBody,
      response: { 201: SubscriptionResponse, ...errorResponses(404, 409, 413, 415) },
    },
  }, async (request, reply) => {
    const { deviceId } = request.params;
    const input = request.body.subscription;
    const subscription = presentSubscription(app.links, await createSubscription(deps, request.principal!, deviceId, input));
    reply.code(201).header('Location', subscription.links.self);
    return { subscription };
  });

  app.get('/api/v1/devices/:deviceId/subscriptions', {
    config,
    schema: {
      tags, summary: "The application's subscriptions of a device, newest first", params: DeviceIdParams,
      querystring: ListQuery, response: { 200: SubscriptionList, ...errorResponses(404) },
    },
  }, async (request) => {
    const { deviceId } = request.params;
    const query = request.query;
    await repos.devices.requireReadable(request.principal!, deviceId);
    const w = parseOffsetWindow(query);
    const filter = parseFilter(query);
    const { total, subscriptions } = await repos.subscriptions.listForDevice(request.principal!, deviceId, filter, w);
    return {
      subscriptions: subscriptions.map((s) => presentSubscription(app.links, s)),
      meta: offsetMeta(app.links, 'event', `/api/v1/devices/${deviceId}/subscriptions`, { total, ...w }, filter),
    };
  });

  app.get('/api/v1/subscriptions/:subscriptionId', {
    config,
    schema: {
      tags, summary: 'One subscription', params: SubscriptionIdParams,
      response: { 200: SubscriptionResponse, ...errorResponses(404) },
    },
  }, async (request) => {
    const { subscriptionId } = request.params;
    const subscription = await repos.subscriptions.get(request.principal!, subscriptionId);
    if (!subscription) throw new NotFound();
    return { subscription: presentSubscription(app.links, subscription) };
  });

  app.put('/api/v1/subscriptions/:subscriptionId', {
    config,
    schema: {
      tags, summary: 'Change the url, appData and/or delivery state (pause, resume) of a subscription', params: SubscriptionIdParams, body: UpdateBody,
      response: { 200: SubscriptionResponse, ...errorResponses(404, 413, 415) },
    },
  }, async (request) => {
    const { subscriptionId } = request.params;
    const input = request.body.subscription;
    return { subscription: presentSubscription(app.links, await updateSubscription(deps, request.principal!, subscriptionId, input)) };
  });

  app.delete('/api/v1/subscriptions/:subscriptionId', {
    config,
    schema: {
      tags, summary: 'Delete a subscription and its notifications', params: SubscriptionIdParams,
      response: { 204: NoContent('Deleted'), ...errorResponses(404) },
    },
  }, async (request, reply) => {
    const { subscriptionId } = request.params;
    if (!(await repos.subscriptions.delete(request.principal!, subscriptionId))) throw new NotFound();
    return reply.code(204).send();
  });

  await app.register(notificationsRoutes);
}
