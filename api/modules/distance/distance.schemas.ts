import { Type } from 'typebox';
import { Links, Nullable, StreamMeta, StreamQuery, Timestamp, Uuid } from '../../schemas/common.js';

const Unit = (description: string) => Type.String({ description });

/**
 * Largest odometer reading or trigger threshold, in the unit it is given in: 1e8 km is 2,500 times round the Earth and
 * past any odometer's 6 or 7 digits. A bound well inside float8, so that the reading converted to meters (stored) is
 * still a finite float8: near float8's maximum, a reading in miles would overflow to infinity in meters and be
 * answered as null.
 */
export const MAX_DISTANCE = 100_000_000;

export const Distance = Type.Object({
  vehicleId: Uuid('Vehicle id'),
  value: Type.Number({ description: 'Estimated odometer at `until`, in `unit`' }),
  unit: Unit('m, km or mi, from the x-service-unit (or x-vinli-unit) header; m by default'),
  confidenceMin: Type.Number({ description: 'Lower end of the interval the odometer is in, in `unit`' }),
  confidenceMax: Type.Number({ description: 'Upper end of the interval, in `unit`; it widens with the distance since the reading' }),
  lastOdometerDate: Nullable(Timestamp('Date of the reading the estimate starts from; null when there is no reading')),
  basis: Type.String({ description: 'odometer: a reading plus the distance since; observed: no reading, only the distance the platform saw (not the true odometer)' }),
  links: Links('self, vehicle'),
}, { description: 'Distance: the odometer estimate' });

export const DistanceResponse = Type.Object({ distance: Distance });
export const DistanceList = Type.Object({
  distances: Type.Array(Distance, { description: "One estimate per reading of the application in (since, until], newest first; without readings, the observed one" }),
});

export const DistanceQuery = Type.Object({
  since: StreamQuery.since,
  until: Type.Optional(Type.String({ description: 'The time of the estimate (default now): ISO 8601, YYYY-MM-DD or epoch milliseconds' })),
  limit: StreamQuery.limit,
});

export const Odometer = Type.Object({
  id: Uuid('Odometer reading id'),
  vehicleId: Uuid('Vehicle id'),
  reading: Type.Number({ description: 'Meters (converted from the submitted unit)' }),
  unit: Type.Literal('m', { description: 'Always m: readings are stored and returned in meters' }),
  date: Timestamp('When the odometer showed this reading'),
  links: Links('self, vehicle'),
}, { description: 'Odometer reading' });

export const CreateOdometerBody = Type.Object({
  odometer: Type.Object({
    reading: Type.Number({ maximum: MAX_DISTANCE, description: `The odometer value, 0..${MAX_DISTANCE}, in \`unit\`` }),
    unit: Unit('km, mi or m'),
    date: Type.Optional(Type.String({ description: 'When it was read: ISO 8601, YYYY-MM-DD or epoch ms; default now; not in the future' })),
    allowDecrease: Type.Optional(Type.Boolean({
      description: 'Addition to the platform API. true: record the reading even though it makes the odometer go backwards '
        + '(smaller than a reading dated before it, or larger than one dated after it), as after an instrument cluster was '
        + 'replaced; the estimate then starts again from it. Default false: such a reading is a 400',
    })),
  }, { description: 'The reading' }),
});

export const OdometerResponse = Type.Object({ odometer: Odometer });
export const OdometerList = Type.Object({ odometers: Type.Array(Odometer), meta: StreamMeta });

export const OdometerTrigger = Type.Object({
  id: Uuid('Trigger id'),
  vehicleId: Uuid('Vehicle id'),
  type: Type.String({ description: 'specific (the odometer reaches threshold), from_now (threshold travelled after creation), milestone (every multiple of threshold)' }),
  threshold: Type.Number({ description: 'Meters (converted from the submitted unit)' }),
  unit: Type.Literal('m', { description: 'Always m' }),
  events: Type.Integer({ description: 'distance-trigger events produced so far' }),
  createdAt: Timestamp('When the trigger was set; only distance travelled after it counts'),
  links: Links('self, vehicle'),
}, { description: 'Odometer trigger' });

export const CreateTriggerBody = Type.Object({
  odometerTrigger: Type.Object({
    type: Type.String({ description: 'specific, from_now or milestone' }),
    threshold: Type.Number({ maximum: MAX_DISTANCE, description: `Distance > 0 and at most ${MAX_DISTANCE}, in \`unit\`` }),
    unit: Unit('km, mi or m'),
  }, { description: 'The trigger' }),
});

export const TriggerResponse = Type.Object({ odometerTrigger: OdometerTrigger });
export const TriggerList = Type.Object({ odometerTriggers: Type.Array(OdometerTrigger), meta: StreamMeta });

export const OdometerIdParams = Type.Object({ odometerId: Uuid('Odometer reading id') });
export const TriggerIdParams = Type.Object({ triggerId: Uuid('Odometer trigger id') });
