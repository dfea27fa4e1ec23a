import { Type } from 'typebox';
import { Links, Nullable, StreamMeta, Timestamp, Uuid } from '../../schemas/common.js';

const Num = (description: string) => Type.Number({ description });
const NullNum = (description: string) => Nullable(Type.Number({ description }));

const GeoPoint = (description: string) => Nullable(Type.Object({
  type: Type.Literal('Point'),
  coordinates: Type.Array(Type.Number(), { description: '[longitude, latitude] in degrees (WGS 84)' }),
}, { description }));

export const TripStats = Type.Object({
  averageLoad: NullNum('Mean calculated engine load, percent; null without load samples'),
  averageMovingSpeed: NullNum('Mean of the speed samples above 0, km/h'),
  averageSpeed: NullNum('distance / duration, km/h'),
  comprehensiveLocations: Type.Boolean({ description: 'At least 80% of the messages (and 2) carried a location' }),
  distance: Num('m: distanceByGPS when locations are comprehensive, else distanceByVSS'),
  distanceByGPS: Num('m: geodesic length of the track (ST_Length on geography)'),
  distanceByVSS: NullNum('m: vehicle speed integrated over time (trapezoids); null with fewer than 2 speed samples'),
  duration: Type.Integer({ description: 'ms from start to stop (open trip: to the newest message)' }),
  fuelConsumed: NullNum('L: fuel-rate PID integrated over time, else mass air flow / (AFR × density); null without either'),
  fuelEconomy: NullNum('US mpg = distance / fuel consumed; gasoline unless the fuel type PID said diesel'),
  hardAccelCount: Nullable(Type.Integer({ description: 'Hard accelerations (≥ 3.0 m/s² above 10 km/h; consecutive samples are one)' })),
  hardBrakeCount: Nullable(Type.Integer({ description: 'Hard brakes (≥ 3.5 m/s² above 10 km/h; consecutive samples are one)' })),
  locationCount: Type.Integer({ description: 'Messages with a location' }),
  maxSpeed: NullNum('km/h'),
  messageCount: Type.Integer({ description: 'Messages in the trip' }),
  stdDevMovingSpeed: NullNum('Standard deviation of the speed samples above 0, km/h'),
  stopCount: Type.Integer({ description: 'Times the speed fell below 2 km/h after moving (the final halt excluded)' }),
  substantial: Type.Boolean({ description: 'At least 5 messages over at least 60 s' }),
}, { description: 'Trip statistics; formulas in docs/concepts/trips-and-report-cards.md' });

export const Trip = Type.Object({
  id: Uuid('Trip id'),
  start: Timestamp('First message of the trip'),
  stop: Nullable(Timestamp('Last message of the trip; null while the trip is open')),
  status: Type.Union([Type.Literal('started'), Type.Literal('completed')], { description: '`started` while open, `completed` once its statistics are final' }),
  vehicleId: Nullable(Uuid('Vehicle the device was in at the start')),
  deviceId: Uuid('Device that recorded the trip'),
  startPoint: GeoPoint('First location of the trip'),
  stopPoint: GeoPoint('Last location of the trip (so far, while open)'),
  preview: Nullable(Type.String({ description: 'Encoded polyline (precision 5) of the track simplified within 0.0002° (every point within ~23 m)' })),
  stats: TripStats,
  meta: Type.Object({
    startReason: Type.String({ description: 'startup (ignition frame) or motion (no ignition: speed ≥ 5 km/h)' }),
    endReason: Nullable(Type.String({ description: 'shutdown, stationary, gap, startup (a new one without shutdown) or silent (closed by the sweep); null while open' })),
  }, { description: 'Why the trip started and ended (drivewire extension)' }),
  links: Links('self, device, vehicle, locations, messages, events, snapshots (the last four with since/until of the trip in epoch ms; snapshots with fields=all), reportCard (once the trip is closed)'),
}, { description: 'Trip' });

export const TripList = Type.Object({ trips: Type.Array(Trip), meta: StreamMeta });
export const TripResponse = Type.Object({ trip: Trip });
export const TripIdParams = Type.Object({ tripId: Uuid('Trip id') });
