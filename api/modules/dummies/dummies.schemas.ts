import { Type } from 'typebox';
import { Links, Nullable, OffsetMeta, Timestamp, Uuid } from '../../schemas/common.js';
import { MAX_SPEED, MIN_SPEED, SCENARIOS, VIN_RULE } from '../../../simulator/runs.js';

export const Route = Type.Object({
  id: Uuid('Route id (the routeId of a run)'),
  name: Type.String({ description: 'Route name' }),
  description: Type.String({ description: 'Free text: start and stop coordinates, geofences' }),
  messageCount: Type.Integer({ description: 'Messages the recorded drive produced' }),
  locationCount: Type.Integer({ description: 'Messages of the recorded drive with a GPS fix' }),
  distanceByGPS: Type.Number({ description: 'm, length of the recorded GPS trace' }),
  distanceByVSS: Type.Number({ description: 'm, distance by the vehicle speed sensor' }),
  duration: Type.Number({ description: 'ms the recorded drive took; a run at speed 1 lasts this long' }),
  preview: Type.String({ description: 'The path as a Google encoded polyline, precision 5' }),
  links: Links('self'),
}, { description: 'Route' });

export const ImportRouteBody = Type.Object({
  route: Type.Object({
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'Name (default: the name in the file, else the file name)' })),
    description: Type.Optional(Type.String({ maxLength: 4000, description: 'Free text (default: the description in the file)' })),
    duration: Type.Optional(Type.Number({ exclusiveMinimum: 0, description: 'ms the drive takes at speed 1 (default: an estimate for an urban drive)' })),
    file: Type.Optional(Type.String({ description: 'The text of a GeoJSON, GPX or encoded-polyline file; the format is detected' })),
    fileName: Type.Optional(Type.String({ maxLength: 255, description: 'Name of the file, used in error messages and as the default name' })),
    geojson: Type.Optional(Type.Object({}, { additionalProperties: true, description: 'A GeoJSON LineString, Feature or FeatureCollection' })),
    gpx: Type.Optional(Type.String({ description: 'GPX document text (track or route points)' })),
    polyline: Type.Optional(Type.String({ description: 'Google encoded polyline, precision 5' })),
  }, { description: 'Exactly one of file, geojson, gpx or polyline' }),
});

export const Dummy = Type.Object({
  id: Uuid('Dummy id'),
  name: Type.String({ description: 'Dummy name, unique within the application' }),
  deviceId: Uuid('The real device the dummy drives'),
  caseId: Type.String({ description: 'Case id of the device: VV + 5 characters' }),
  createdAt: Timestamp('When the dummy was created'),
  links: Links('self, runs, device, messages, events'),
}, { description: 'Dummy' });

export const CreateDummyBody = Type.Object({
  dummy: Type.Object({ name: Type.String({ minLength: 1, maxLength: 100, description: 'Dummy name, unique within the application' }) }),
});

const State = Type.Union([Type.Literal('starting'), Type.Literal('running'), Type.Literal('stopping'), Type.Literal('finished')],
  { description: 'starting → running → (repeat: running again) → finished; stopping after a stop request' });

export const RunStatus = Type.Object({
  routeId: Uuid('Route driven'),
  repeat: Type.Boolean({ description: 'Restarts after each completion until stopped' }),
  state: State,
  repeatCount: Type.Integer({ description: 'Completed passes before the current one' }),
  lastSpeed: Nullable(Type.Number({ description: 'km/h at the last frame sent; null before the first' })),
  remainingSeconds: Nullable(Type.Number({ description: 's of wall-clock time until the current pass ends' })),
  remainingMessages: Nullable(Type.Integer({ description: 'Frames the current pass has yet to send' })),
  speed: Type.Number({ description: 'Playback speed: 1 real time, N plays the drive in 1/N of its duration' }),
  scenarios: Type.Array(Type.String(), { description: 'Scenarios of the run' }),
  vin: Type.String({ description: 'VIN the dummy reports' }),
  framesSent: Type.Integer({ description: 'Frames sent by the run so far (all passes)' }),
  distance: Type.Number({ description: 'm driven by the run so far (all passes)' }),
  duration: Type.Number({ description: 'ms of drive time covered so far (all passes; not wall-clock)' }),
  nextPassAt: Nullable(Timestamp("While waiting: when the next pass starts. A pass is stamped on the dummy's own clock, from its start or "
    + 'just after its previous stamps, so it waits only when its frames would lead real time by more than the gateway accepts of a dummy')),
  waitReason: Nullable(Type.String({ description: 'While waiting: why, in words; null when the run does not wait' })),
  outcome: Nullable(Type.Union([Type.Literal('completed'), Type.Literal('stopped'), Type.Literal('failed')], { description: 'How a finished run ended' })),
  error: Nullable(Type.String({ description: 'Why a failed run failed' })),
  createdAt: Timestamp('When the run was requested'),
  startedAt: Nullable(Timestamp('When its first pass began')),
  endedAt: Nullable(Timestamp('When it finished')),
}, { description: 'Run status, with totals over all passes' });

export const Run = Type.Object({
  id: Uuid('Run id'),
  status: RunStatus,
  links: Links('self (the _current URL while active), run (this run by id), dummy, route'),
}, { description: 'Run' });

export const StartRunBody = Type.Object({
  run: Type.Object({
    vin: Type.String({ description: `Made-up VIN: ${VIN_RULE}` }),
    routeId: Uuid('A route from GET /routes'),
    repeat: Type.Optional(Type.Boolean({ description: 'Restart after completion until stopped (default false)' })),
    speed: Type.Optional(Type.Number({ description: `Playback speed ${MIN_SPEED}..${MAX_SPEED} (default 1, real time)` })),
    scenarios: Type.Optional(Type.Array(Type.String(), { maxItems: 20, description: `Any of ${SCENARIOS.join(', ')}` })),
  }),
});

export const RouteIdParams = Type.Object({ routeId: Uuid('Route id') });
export const DummyIdParams = Type.Object({ dummyId: Uuid('Dummy id') });
export const RunIdParams = Type.Object({ dummyId: Uuid('Dummy id'), runId: Uuid('Run id') });

export const RouteList = Type.Object({ routes: Type.Array(Route), meta: OffsetMeta });
export const RouteResponse = Type.Object({ route: Route });
export const DummyList = Type.Object({ dummies: Type.Array(Dummy), meta: OffsetMeta });
export const DummyResponse = Type.Object({ dummy: Dummy });
export const RunResponse = Type.Object({ run: Run });
export const CurrentRunResponse = Type.Object({ run: Nullable(Run) }, { description: 'run is null when the dummy has no active run' });
export const RunList = Type.Object({ runs: Type.Array(Run), meta: OffsetMeta });
