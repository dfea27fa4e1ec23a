import { Type, type TSchema } from 'typebox';

export const Uuid = (description: string) => Type.String({ format: 'uuid', description });
export const Timestamp = (description: string) => Type.String({ format: 'date-time', description });
export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
export const Links = (description = 'Absolute URLs to this record and related records') =>
  Type.Record(Type.String(), Type.String(), { description });

/**
 * A 204 answer: `type: 'null'`, which the OpenAPI document shows as a response without content. Its handler
 * sends nothing (`reply.code(204).send()`), so the static type is `undefined`.
 */
export const NoContent = (description?: string) =>
  Type.Unsafe<undefined>(description === undefined ? Type.Null() : Type.Null({ description }));

export const ErrorBody = Type.Object({
  statusCode: Type.Integer({ description: 'HTTP status code' }),
  error: Type.String({ description: 'HTTP reason phrase' }),
  message: Type.String({ description: 'What went wrong, in words' }),
}, { description: 'Error response' });

/** Every route documents the error answers it can give. */
export const errorResponses = (...codes: number[]) =>
  Object.fromEntries([400, 401, ...codes].map((c) => [c, ErrorBody]));

const QueryString = (description: string) => Type.Optional(Type.String({ description }));

export const OffsetQuery = {
  offset: QueryString('Offset of the first record (default 0)'),
  limit: QueryString('Page size (default 20, at most 100; larger values are clamped)'),
};

export const StreamQuery = {
  since: QueryString('Exclusive lower bound: ISO 8601, YYYY-MM-DD or epoch milliseconds'),
  until: QueryString('Inclusive upper bound (default now): ISO 8601, YYYY-MM-DD or epoch milliseconds; in a prior link '
    + 'whose page ended inside a millisecond, that millisecond followed by the last record\'s id in 39 digits (a cursor)'),
  limit: QueryString('Page size (default 20, at most 100; larger values are clamped)'),
};

export const OffsetPagination = Type.Object({
  total: Type.Integer({ description: 'Total number of records' }),
  offset: Type.Integer({ description: 'Offset of this page' }),
  limit: Type.Integer({ description: 'Page size' }),
  links: Type.Object({
    first: Type.String(), last: Type.String(),
    next: Type.Optional(Type.String({ description: 'Absent on the last page' })),
    prev: Type.Optional(Type.String({ description: 'Absent on the first page' })),
  }),
}, { description: 'Offset pagination' });

export const StreamPagination = Type.Object({
  remaining: Type.Integer({ description: 'Records the `prior` link reaches (exact up to 10,000; 10,000 beyond, '
    + "except a device's messages without `since`, exact at any size)" }),
  limit: Type.Integer(),
  until: Type.String({ description: 'Upper bound used (ISO 8601)' }),
  since: Type.String({ description: 'Lower bound used (ISO 8601; the epoch when not given)' }),
  sortDir: Type.Literal('desc'),
  links: Type.Object({ prior: Type.Optional(Type.String({
    description: 'Next older page: the same path and filters with `until` = the last item\'s timestamp − 1 ms (epoch ms), or, '
      + 'when the next older record shares the last item\'s millisecond, `until` = that millisecond with the last '
      + 'item\'s id in 39 more fractional digits (a cursor any date parser reads as the millisecond)',
  })) }),
}, { description: 'Stream pagination, newest first (timestamp desc, then id desc); a page holds at most `limit` items; '
  + '`links` is empty when nothing remains' });

export const OffsetMeta = Type.Object({ pagination: OffsetPagination });
export const StreamMeta = Type.Object({ pagination: StreamPagination });

export const DeviceIdParams = Type.Object({ deviceId: Uuid('Device id') });
export const VehicleIdParams = Type.Object({ vehicleId: Uuid('Vehicle id') });

/** Free-form JSON object (telemetry data, vehicle data, event meta). */
export const AnyObject = (description: string) => Type.Object({}, { additionalProperties: true, description });
