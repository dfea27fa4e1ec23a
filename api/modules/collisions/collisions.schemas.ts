import { Type } from 'typebox';
import { Links, Nullable, StreamMeta, Timestamp, Uuid } from '../../schemas/common.js';

export const Collision = Type.Object({
  id: Uuid('Collision id'),
  deviceId: Uuid('Device that recorded the impact'),
  vehicleId: Nullable(Uuid('Vehicle the device was in')),
  timestamp: Timestamp('First sample of the impact'),
  location: Nullable(Type.Object({
    latitude: Type.Number({ description: 'Degrees (WGS 84)' }),
    longitude: Type.Number({ description: 'Degrees (WGS 84)' }),
  }, { description: 'Where it happened; null when the device had no position within 5 minutes before' })),
  links: Links('self, device, vehicle'),
}, { description: 'Collision' });

export const CollisionList = Type.Object({ collisions: Type.Array(Collision), meta: StreamMeta });
export const CollisionResponse = Type.Object({ collision: Collision });
export const CollisionIdParams = Type.Object({ collisionId: Uuid('Collision id') });
