import { Type } from 'typebox';
import { Links, Nullable, OffsetMeta, Timestamp, Uuid } from '../../schemas/common.js';

const NullableNumber = (description: string) => Type.Unsafe<number | null>({ type: ['number', 'null'], description });

/**
 * A boundary as sent on create. One shape for the three types so a wrong field gets a
 * plain message; which fields each type needs, and their ranges, are checked in rules.service.ts.
 */
const Coordinates = (description: string) => Type.Array(Type.Array(Type.Unsafe<unknown>({})), { description });
const COORDINATES = 'polygon: rings of [longitude, latitude]; each ring closed (first = last), at least 4 positions, not '
  + 'self-intersecting; rings after the first are holes. corridor: the line\'s positions [longitude, latitude] (a GeoJSON '
  + 'LineString\'s coordinates), at least 2';
const BUFFER = 'radius, polygon, corridor: meters beyond the fence a device must go to count as outside again (hysteresis; 0..100000)';

/**
 * A boundary as sent on create. One shape for the four types so a wrong field gets a
 * plain message; which fields each type needs, and their ranges, are checked in rules.service.ts.
 */
export const BoundaryInput = Type.Object({
  type: Type.String({ description: 'parametric, radius, polygon or corridor' }),
  parameter: Type.Optional(Type.String({ description: 'parametric: a decimal telemetry parameter key, e.g. vehicleSpeed' })),
  min: Type.Optional(NullableNumber("parametric: inclusive lower bound, within the parameter's range (its unit's); null or absent = unbounded")),
  max: Type.Optional(NullableNumber("parametric: inclusive upper bound, within the parameter's range; null or absent = unbounded (not both)")),
  deadband: Type.Optional(Type.Number({ description: "parametric: how far past a bound (in the parameter's unit) the value must go to count as outside again (hysteresis; ≥ 0)" })),
  lon: Type.Optional(Type.Number({ description: 'radius: center longitude, degrees (-180..180)' })),
  lat: Type.Optional(Type.Number({ description: 'radius: center latitude, degrees (-90..90)' })),
  radius: Type.Optional(Type.Number({ description: 'radius: meters, greater than 0 and at most 20,037,509 (half the equator)' })),
  coordinates: Type.Optional(Coordinates(COORDINATES)),
  polyline: Type.Optional(Type.String({ description: 'corridor: the line as a Google encoded polyline (precision 5), instead of coordinates' })),
  widthMeters: Type.Optional(Type.Number({ description: 'corridor: a position is inside when at most this many meters from the line (0 < width ≤ 50000)' })),
  bufferMeters: Type.Optional(Type.Number({ description: BUFFER })),
  id: Type.Optional(Type.String({ description: 'Ignored on create (boundary ids are assigned)' })),
}, { description: 'Boundary' });

const Seconds = (description: string) => Type.Optional(Type.Number({ description }));
export const ActiveHours = Type.Object({
  timeZone: Type.String({ maxLength: 64, description: 'IANA time zone the windows are local to, e.g. Europe/Berlin' }),
  windows: Type.Array(Type.Object({
    days: Type.Array(Type.String(), { description: 'mon, tue, wed, thu, fri, sat, sun: the days a window starts on' }),
    from: Type.String({ description: 'HH:MM, local time the window opens' }),
    until: Type.String({ description: 'HH:MM, local time it closes (earlier than from: the next day; equal: 24 hours)' }),
  }, { additionalProperties: false }), { description: '1 to 14 windows' }),
}, { additionalProperties: false, description: 'When the rule reads messages: outside these windows it neither evaluates nor fires' });

const OPTION_FIELDS = {
  minInsideSeconds: Seconds('Dwell: an enter only once the device has been covered this long (0..86400), stamped when it crossed'),
  minOutsideSeconds: Seconds('Dwell: a leave only once the device has been outside this long (0..86400), stamped when it crossed'),
  detectCrossings: Type.Optional(Type.Boolean({ description: 'A straight segment between two consecutive fixes through the geographic boundary gives the enter and leave it implies' })),
  activeHours: Type.Optional(ActiveHours),
};

export const CreateRuleBody = Type.Object({
  rule: Type.Object({
    name: Type.String({ minLength: 1, maxLength: 200, description: 'Rule name' }),
    boundaries: Type.Array(BoundaryInput, { description: 'At least one boundary, at most one of them geographic (radius, polygon or corridor)' }),
    ...OPTION_FIELDS,
  }),
});

export const Boundary = Type.Object({
  id: Uuid('Boundary id'),
  type: Type.String({ description: 'parametric, radius, polygon or corridor' }),
  parameter: Type.Optional(Type.String({ description: 'parametric: telemetry parameter key' })),
  min: Type.Optional(Nullable(Type.Number({ description: 'parametric: inclusive lower bound (null = unbounded)' }))),
  max: Type.Optional(Nullable(Type.Number({ description: 'parametric: inclusive upper bound (null = unbounded)' }))),
  lon: Type.Optional(Type.Number({ description: 'radius: center longitude' })),
  lat: Type.Optional(Type.Number({ description: 'radius: center latitude' })),
  radius: Type.Optional(Type.Number({ description: 'radius: meters' })),
  coordinates: Type.Optional(Coordinates('polygon: rings of [longitude, latitude]; corridor: the line\'s [longitude, latitude] positions')),
  deadband: Type.Optional(Type.Number({ description: 'parametric: hysteresis, when set' })),
  widthMeters: Type.Optional(Type.Number({ description: 'corridor: meters from the line' })),
  bufferMeters: Type.Optional(Type.Number({ description: 'radius, polygon, corridor: hysteresis in meters, when set' })),
}, { description: 'Boundary with its id' });

const RuleFields = {
  id: Uuid('Rule id'),
  name: Type.String({ description: 'Rule name' }),
  deviceId: Uuid('Device the rule watches'),
};
/** The options a rule was created with: each present only when set. */
const OptionFields = {
  minInsideSeconds: Seconds('Dwell before an enter, seconds'),
  minOutsideSeconds: Seconds('Dwell before a leave, seconds'),
  detectCrossings: Type.Optional(Type.Boolean({ description: 'Crossings between fixes count' })),
  activeHours: Type.Optional(ActiveHours),
};
const StateFields = {
  evaluated: Type.Boolean({ description: 'Every boundary has been known at least once since the rule was created' }),
  covered: Type.Boolean({ description: 'The device is inside all boundaries as last evaluated' }),
  createdAt: Timestamp('When the rule was created'),
};

export const Rule = Type.Object({
  ...RuleFields,
  boundaries: Type.Array(Boundary),
  ...OptionFields,
  ...StateFields,
  object: Type.Object({ id: Uuid('Device id'), type: Type.Literal('device') }, { description: 'What the rule is about' }),
  links: Links('self, events (rule events of this rule), subscriptions (subscriptions to this rule)'),
}, { description: 'Rule' });

export const RuleSummary = Type.Object({ ...RuleFields, ...OptionFields, ...StateFields, links: Links('self, events, subscriptions') },
  { description: 'Rule in lists: no boundaries' });

export const RuleResponse = Type.Object({ rule: Rule });
export const RuleList = Type.Object({ rules: Type.Array(RuleSummary), meta: OffsetMeta });
export const RuleIdParams = Type.Object({ ruleId: Uuid('Rule id') });
