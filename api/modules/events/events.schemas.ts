import { Type } from 'typebox';
import { AnyObject, Links, Nullable, StreamMeta, StreamQuery, Timestamp, Uuid } from '../../schemas/common.js';

const QueryString = (description: string) => Type.Optional(Type.String({ description }));

/** Event list filters; `prior` links keep them. */
export const EventListQuery = Type.Object({
  ...StreamQuery,
  type: QueryString('Event type, exact (e.g. startup); `rule` or `rule-*` = rule-enter and rule-leave; `<prefix>-*` = types starting with `<prefix>-`'),
  objectId: QueryString('Only events about this object (a rule, vehicle or trip id)'),
  objectType: QueryString('Only events about this kind of object: rule, vehicle or trip'),
});

export const Event = Type.Object({
  id: Uuid('Event id'),
  timestamp: Timestamp('When the event occurred'),
  deviceId: Uuid('Device of the event'),
  vehicleId: Nullable(Uuid('Vehicle the device was in at the time, if known')),
  stored: Timestamp('When the event was stored'),
  storageLatency: Type.Integer({ description: 'stored − timestamp, milliseconds' }),
  eventType: Type.String({ description: 'startup, shutdown, phone-home, rule-enter, rule-leave, trip-*, dtc-on, ... (docs/concepts/rules-events-webhooks.md)' }),
  object: Type.Object({
    id: Nullable(Type.String({ description: 'Id of the rule, vehicle or trip (null when the vehicle is not known)' })),
    type: Type.String({ description: 'rule, vehicle or trip' }),
    appId: Type.Optional(Uuid('For rules: the application that owns the rule')),
  }, { description: 'What the event is about' }),
  meta: Nullable(AnyObject('Depends on the event type; for rule events: direction, firstEval, rule, message')),
  links: Links('self, notifications'),
}, { description: 'Event' });

export const EventList = Type.Object({ events: Type.Array(Event), meta: StreamMeta });
export const EventResponse = Type.Object({ event: Event });
export const EventIdParams = Type.Object({ eventId: Uuid('Event id') });
