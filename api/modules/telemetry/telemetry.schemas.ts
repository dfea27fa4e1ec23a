import { Type } from 'typebox';
import { AnyObject, StreamMeta, StreamQuery, Timestamp, Uuid } from '../../schemas/common.js';

const MessageData = AnyObject(
  'Parameter keys to values: only the parameters captured since the previous message. `location` is a GeoJSON ' +
  'Point with coordinates [longitude, latitude]; `accel` holds maxX, maxY, maxZ, minX, minY, minZ');

export const Message = Type.Object({
  id: Uuid('Message id'),
  timestamp: Timestamp('When the device captured the message'),
  data: MessageData,
  links: Type.Object({ self: Type.String({ description: 'This message: /api/v1/messages/{id}?deviceId={deviceId}' }) }),
}, { description: 'Telemetry message' });

export const Snapshot = Type.Object({
  id: Uuid('Id of the message the snapshot was taken from'),
  timestamp: Timestamp('When the device captured the message'),
  data: AnyObject('Only the requested parameters that the message holds'),
  links: Type.Object({ self: Type.String({ description: 'The underlying message' }) }),
}, { description: 'Parameter snapshot' });

const Point = Type.Object({
  type: Type.Literal('Point'),
  coordinates: Type.Array(Type.Number(), { minItems: 2, maxItems: 2, description: '[longitude, latitude]' }),
}, { description: 'GeoJSON Point' });

const FeatureProperties = Type.Object({
  timestamp: Timestamp('When the device was at this location'),
  id: Uuid('Id of the message holding the location'),
  data: Type.Optional(AnyObject('The requested parameters present in that message (absent when no fields were asked for)')),
}, {
  additionalProperties: true,
  description: 'timestamp, id and the requested parameters, both flat and under `data`, so that readers of either shape find them',
});

export const Feature = Type.Object({
  type: Type.Literal('Feature'),
  geometry: Point,
  properties: FeatureProperties,
}, { description: 'One location of the device' });

export const MessageList = Type.Object({ messages: Type.Array(Message), meta: StreamMeta });
export const MessageResponse = Type.Object({ message: Message });
export const SnapshotList = Type.Object({ snapshots: Type.Array(Snapshot), meta: StreamMeta });
export const LocationList = Type.Object({
  locations: Type.Object({
    type: Type.Literal('FeatureCollection'),
    features: Type.Array(Feature),
  }, { description: 'GeoJSON FeatureCollection, newest first' }),
  meta: StreamMeta,
});

export const MessageIdParams = Type.Object({ messageId: Uuid('Message id') });
export const DeviceMessageParams = Type.Object({ deviceId: Uuid('Device id'), messageId: Uuid('Message id') });
export const MessageQuery = Type.Object({
  deviceId: Type.Optional(Uuid('Device the message belongs to (as in message self links); another device gives 404')),
});

export const LocationsQuery = Type.Object({
  ...StreamQuery,
  fields: Type.Optional(Type.String({
    description: '`all` (every parameter of the message) or comma-separated parameter keys to copy into ' +
      'each feature\'s properties; absent or empty = timestamp and id only',
  })),
});
export const SnapshotsQuery = Type.Object({
  ...StreamQuery,
  fields: Type.Union([Type.String(), Type.Array(Type.String(), { maxItems: 4 })], {
    description: 'Required: `all` (every parameter of the message) or comma-separated parameter keys; only messages ' +
      'holding at least one of them are returned. Given more than once, the last one counts',
  }),
});
