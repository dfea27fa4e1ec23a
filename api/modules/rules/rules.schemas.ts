import { Type } from 'typebox';
import { Links, Nullable, OffsetMeta, Timestamp, Uuid } from '../../schemas/common.js';

const NullableNumber = (description: string) => Type.Unsafe<number | null>({ type: ['number', 'null'], description });

/**
 * A boundary as sent on create. One shape for the three types so a wrong field gets a
 * plain message; which fields each type needs, and their ranges, are checked in rules.service.ts.
 */
export const BoundaryInput = Type.Object({
  type: Type.String({ description: 'parametric, radius or polygon' }),
  parameter: Type.Optional(Type.String({ description: 'parametric: a decimal telemetry parameter key, e.g. vehicleSpeed' })),
  min: Type.Optional(NullableNumber("parametric: inclusive lower bound, within the parameter's range (its unit's); null or absent = unbounded")),
  max: Type.Optional(NullableNumber("parametric: inclusive upper bound, within the parameter's range; null or absent = unbounded (not both)")),
  lon: Type.Optional(Type.Number({ description: 'radius: center longitude, degrees (-180..180)' })),
  lat: Type.Optional(Type.Number({ description: 'radius: center latitude, degrees (-90..90)' })),
  radius: Type.Optional(Type.Number({ description: 'radius: meters, greater than 0 and at most 20,037,509 (half the equator)' })),
  coordinates: Type.Optional(Type.Array(Type.Array(Type.Array(Type.Number())), {
    description: 'polygon: rings of [longitude, latitude]; each ring closed (first = last), at least 4 positions, not self-intersecting; rings after the first are holes',
  })),
  id: Type.Optional(Type.String({ description: 'Ignored on create (boundary ids are assigned)' })),
}, { description: 'Boundary' });

export const CreateRuleBody = Type.Object({
  rule: Type.Object({
    name: Type.String({ minLength: 1, maxLength: 200, description: 'Rule name' }),
    boundaries: Type.Array(BoundaryInput, { description: 'At least one boundary, at most one of them geographic (radius or polygon)' }),
  }),
});

export const Boundary = Type.Object({
  id: Uuid('Boundary id'),
  type: Type.String({ description: 'parametric, radius or polygon' }),
  parameter: Type.Optional(Type.String({ description: 'parametric: telemetry parameter key' })),
  min: Type.Optional(Nullable(Type.Number({ description: 'parametric: inclusive lower bound (null = unbounded)' }))),
  max: Type.Optional(Nullable(Type.Number({ description: 'parametric: inclusive upper bound (null = unbounded)' }))),
  lon: Type.Optional(Type.Number({ description: 'radius: center longitude' })),
  lat: Type.Optional(Type.Number({ description: 'radius: center latitude' })),
  radius: Type.Optional(Type.Number({ description: 'radius: meters' })),
  coordinates: Type.Optional(Type.Array(Type.Array(Type.Array(Type.Number())), { description: 'polygon: rings of [longitude, latitude]' })),
}, { description: 'Boundary with its id' });

const RuleFields = {
  id: Uuid('Rule id'),
  name: Type.String({ description: 'Rule name' }),
  deviceId: Uuid('Device the rule watches'),
};
const StateFields = {
  evaluated: Type.Boolean({ description: 'Every boundary has been known at least once since the rule was created' }),
  covered: Type.Boolean({ description: 'The device is inside all boundaries as last evaluated' }),
  createdAt: Timestamp('When the rule was created'),
};

export const Rule = Type.Object({
  ...RuleFields,
  boundaries: Type.Array(Boundary),
  ...StateFields,
  object: Type.Object({ id: Uuid('Device id'), type: Type.Literal('device') }, { description: 'What the rule is about' }),
  links: Links('self, events (rule events of this rule), subscriptions (subscriptions to this rule)'),
}, { description: 'Rule' });

export const RuleSummary = Type.Object({ ...RuleFields, ...StateFields, links: Links('self, events, subscriptions') },
  { description: 'Rule in lists: no boundaries' });

export const RuleResponse = Type.Object({ rule: Rule });
export const RuleList = Type.Object({ rules: Type.Array(RuleSummary), meta: OffsetMeta });
export const RuleIdParams = Type.Object({ ruleId: Uuid('Rule id') });
