import fc from 'fast-check';
import type { JsonSchema } from './operations.js';
import { hintFor } from './hints.js';

/**
 * Values generated from the JSON schemas of the OpenAPI document: mostly what the schema describes (so
 * requests get past validation into the services and the database), with the edges of each type.
 * `hostile` lets through the classes the API refuses generically (NUL bytes, nesting deeper than 32 levels: see
 * isHostile in requests.ts); without it NUL is replaced, so a run with FUZZ_HOSTILE=0 stays on what the routes
 * themselves answer for.
 */
export interface GenOptions { hostile: boolean; refKinds: string[] }

/** `$ref:<kind>` names an object of the world; resolved when the request is sent. */
export const ref = (kind: string) => `$ref:${kind}`;

const noNul = (o: GenOptions) => (s: string) => (o.hostile ? s : s.replaceAll('\u0000', '\u0001'));

/** Strings a schema-blind client or an attacker sends. */
export function junkString(o: GenOptions): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 4, arbitrary: fc.string({ maxLength: 40 }) },
    { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 40 }) },
    { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 20 }).map(noNul(o)) },
    { weight: 1, arbitrary: fc.constantFrom(1000, 4001, 16 * 1024 + 1, 70_000).map((n) => 'é'.repeat(n)) },
    {
      weight: 3, arbitrary: fc.constantFrom('', ' ', '0', '-1', 'null', 'true', '[]', '{}', "' OR 1=1 --", '%s%n%x',
        '\\', '\u202e\u0645\u0631\u062d\u0628\u0627', 'e\u0301\u0301\u0301', '\ud800', '\udfff\ud800', '🚗💥', '\ufeff',
        '\r\n', '../../etc/passwd', '%00', '${jndi:x}', '<script>', '1e400', 'NaN', 'Infinity', '9'.repeat(40),
        '-Infinity', '-NaN', 'nan', 'undefined', '1e308', '-1e308', '1e154', '-8640000000000000', '8640000000000000', '2026-02-30'),
    },
  );
}

/** Other objects of the world of the same kind (see world.ts). */
const ALIASES: Record<string, string[]> = { dummy: ['idle'], device: ['spare'], application: ['consumer'] };

export function uuidArb(o: GenOptions, kindHint?: string): fc.Arbitrary<string> {
  const kinds = o.refKinds.map(ref);
  return fc.oneof(
    ...(kindHint && o.refKinds.includes(kindHint) ? [{ weight: 6, arbitrary: fc.constantFrom(...[kindHint, ...(ALIASES[kindHint] ?? [])].map(ref)) }] : []),
    { weight: 2, arbitrary: fc.constantFrom(...kinds) },
    { weight: 2, arbitrary: fc.uuid() },
    { weight: 1, arbitrary: fc.uuid().map((u) => u.toUpperCase()) },
    { weight: 1, arbitrary: junkString(o) },
  );
}

/**
 * Numbers JSON carries that float8 arithmetic does not survive: 1e154 squared and 1e308 times anything overflow (a
 * reading of 1e308 mi would be stored, then listed as null), and the largest and smallest doubles.
 */
export const NUMBER_EDGES = [1e308, -1e308, 1e154, -1e154, 1e200, -1e200, Number.MAX_VALUE, -Number.MAX_VALUE, 4294967296,
  -4294967296, Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER];

export function numberArb(schema: JsonSchema): fc.Arbitrary<number> {
  const min = schema.minimum ?? schema.exclusiveMinimum;
  const integer = schema.type === 'integer';
  return fc.oneof(
    { weight: 4, arbitrary: integer ? fc.integer({ min: min ?? -1000, max: (min ?? 0) + 100_000 }) : fc.double({ min: min ?? -1000, max: 1000, noNaN: true }) },
    { weight: 2, arbitrary: integer ? fc.integer() : fc.double({ noNaN: true, noDefaultInfinity: true }) },
    { weight: 1, arbitrary: fc.constantFrom(0, -0, -1, 5e-324, 2 ** 53 + 1, 2 ** 31, -(2 ** 31) - 1, 1e21, 0.1) },
    { weight: 1, arbitrary: fc.constantFrom(...NUMBER_EDGES) },
  );
}

/** A value of `schema`; `name` is the property or parameter it is for (see hints.ts). */
export function valueOf(schema: JsonSchema, o: GenOptions, name = '', depth = 0): fc.Arbitrary<unknown> {
  const fromSchema = bySchema(schema, o, name, depth);
  const hint = hintFor(name, schema, o);
  const arb = hint ? fc.oneof({ weight: 5, arbitrary: hint }, { weight: 1, arbitrary: fromSchema }) : fromSchema;
  return schema.nullable ? fc.oneof({ weight: 5, arbitrary: arb }, { weight: 1, arbitrary: fc.constant(null) }) : arb;
}

function bySchema(schema: JsonSchema, o: GenOptions, name: string, depth: number): fc.Arbitrary<unknown> {
  if (schema.enum) return fc.constantFrom(...schema.enum);
  if (schema.anyOf) return fc.oneof(...schema.anyOf.map((s) => valueOf(s, o, name, depth)));
  switch (schema.type) {
    case 'object': return objectOf(schema, o, depth);
    case 'array': return fc.array(valueOf(schema.items ?? {}, o, name, depth + 1), { maxLength: Math.min(schema.maxItems ?? 4, 4) });
    case 'string': return stringOf(schema, o, name);
    case 'integer': case 'number': return numberArb(schema);
    case 'boolean': return fc.boolean();
    default: return fc.jsonValue({ maxDepth: 2 });
  }
}

function stringOf(schema: JsonSchema, o: GenOptions, name: string): fc.Arbitrary<string> {
  if (schema.format === 'uuid') return uuidArb(o, name.replace(/Id$/, '') || undefined);
  if (schema.format === 'email') return fc.oneof(fc.emailAddress(), junkString(o));
  const sized = fc.string({ minLength: schema.minLength ?? 0, maxLength: Math.min(schema.maxLength ?? 40, 40) });
  return fc.oneof({ weight: 4, arbitrary: sized }, { weight: 1, arbitrary: junkString(o) });
}

function objectOf(schema: JsonSchema, o: GenOptions, depth: number): fc.Arbitrary<unknown> {
  const props = schema.properties ?? {};
  const model: Record<string, fc.Arbitrary<unknown>> = {};
  for (const [key, s] of Object.entries(props)) model[key] = valueOf(s, o, key, depth + 1);
  const record = fc.record(model, { requiredKeys: (schema.required ?? []).filter((k) => k in props) });
  if (!schema.additionalProperties || Object.keys(props).length) return record;
  return fc.dictionary(fc.string({ maxLength: 10 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 5 });
}
