import { Type } from 'typebox';
import { Links, Nullable, OffsetMeta, OffsetQuery, StreamMeta, Timestamp, Uuid } from '../../schemas/common.js';
import { EVENT_TYPES } from './subscriptions.service.js';

const EventObject = Type.Object({
  id: Uuid('Id of the object'),
  type: Type.String({ description: 'rule, vehicle, trip or odometer-trigger' }),
}, { description: 'The object an event is about' });

const Delivery = Type.Object({
  state: Type.String({ description: 'active, or paused: its notifications are kept and none is delivered until it is resumed (PUT delivery.state "active")' }),
  consecutiveFailures: Type.Integer({ description: 'Failed delivery attempts in a row; a successful one resets it' }),
  failingSince: Nullable(Timestamp('When the first of those failed attempts was made (null when the latest attempt succeeded)')),
  pausedAt: Nullable(Timestamp('When the subscription was paused: by the platform after repeated failures, or by a PUT (null when active)')),
}, { description: 'How the receiver has been answering (an addition to the original platform\'s subscription)' });

export const Subscription = Type.Object({
  id: Uuid('Subscription id'),
  deviceId: Uuid('Device the subscription listens to'),
  eventType: Type.String({ description: `Event type: ${EVENT_TYPES.join(', ')}` }),
  url: Type.String({ description: 'Callback URL the notifications are POSTed to' }),
  object: Nullable(EventObject),
  appData: Nullable(Type.String({ description: 'Application data echoed in every notification' })),
  createdAt: Timestamp('When the subscription was made'),
  updatedAt: Timestamp('When the subscription was last changed'),
  delivery: Delivery,
  links: Links('self, notifications'),
}, { description: 'Subscription' });

export const Notification = Type.Object({
  id: Uuid('Notification id'),
  eventId: Uuid('The event that triggered the notification'),
  eventType: Type.String({ description: 'Type of that event' }),
  eventTimestamp: Timestamp('When that event occurred'),
  subscriptionId: Uuid('The subscription that matched'),
  url: Type.String({ description: 'Callback URL, copied from the subscription when the notification was made' }),
  payload: Nullable(Type.String({ description: 'The exact body POSTed to the URL (null until the first delivery attempt starts)' })),
  state: Type.String({ description: 'created, queued (also while a failed delivery waits to be tried again), complete, or error (the last attempt failed; final)' }),
  responseCode: Type.Optional(Nullable(Type.Integer({ description: 'HTTP code of the latest attempt (once one was made; null when no answer)' }))),
  response: Type.Optional(Nullable(Type.String({ description: 'Body received, or why the call failed, of the latest attempt (once one was made)' }))),
  notifiedAt: Type.Optional(Nullable(Timestamp('When the latest HTTP call was initiated (once one was made)'))),
  respondedAt: Type.Optional(Nullable(Timestamp('When the successful call completed (complete; null otherwise)'))),
  nextAttemptAt: Type.Optional(Nullable(Timestamp('When the next attempt is due (queued after a failed attempt only; null while its subscription is paused)'))),
  attempts: Type.Integer({ description: 'Delivery attempts made so far' }),
  createdAt: Timestamp('When the notification was made'),
  links: Links('self, event, subscription'),
}, { description: 'Notification' });

const NewSubscriptionFields = Type.Object({
  eventType: Type.String({ description: `Required. One of ${EVENT_TYPES.join(', ')}` }),
  url: Type.String({ description: 'Required. http or https URL on a public address' }),
  object: Type.Optional(EventObject),
  appData: Type.Optional(Nullable(Type.String({ description: 'Optional application data, echoed in notifications; at most 16 KB (UTF-8), else 413' }))),
});

export const CreateBody = Type.Object({ subscription: NewSubscriptionFields });

export const UpdateBody = Type.Object({
  subscription: Type.Object({
    url: Type.Optional(Type.String({ description: 'New callback URL' })),
    appData: Type.Optional(Nullable(Type.String({ description: 'New application data (null clears it); at most 16 KB (UTF-8), else 413' }))),
    eventType: Type.Optional(Type.String({ description: 'Immutable: accepted only when unchanged' })),
    object: Type.Optional(Nullable(EventObject)),
    delivery: Type.Optional(Type.Object({
      state: Type.Optional(Type.String({ description: '"paused" pauses the subscription, "active" resumes it (its kept notifications are delivered)' })),
    }, { description: 'Only state is read; the other fields of a fetched subscription\'s delivery are ignored' })),
  }, { description: 'Only url, appData and delivery.state can change; other fields of a fetched subscription are ignored' }),
});

export const SubscriptionIdParams = Type.Object({ subscriptionId: Uuid('Subscription id') });
export const NotificationIdParams = Type.Object({ notificationId: Uuid('Notification id') });
export const EventIdParams = Type.Object({ eventId: Uuid('Event id') });

export const ListQuery = Type.Object({
  ...OffsetQuery,
  objectType: Type.Optional(Type.String({ description: 'Only subscriptions whose object has this type (e.g. rule)' })),
  objectId: Type.Optional(Type.String({ description: 'Only subscriptions whose object has this id (a UUID)' })),
});

export const SubscriptionResponse = Type.Object({ subscription: Subscription });
export const SubscriptionList = Type.Object({ subscriptions: Type.Array(Subscription), meta: OffsetMeta });
export const NotificationResponse = Type.Object({ notification: Notification });
export const NotificationList = Type.Object({ notifications: Type.Array(Notification), meta: StreamMeta });
