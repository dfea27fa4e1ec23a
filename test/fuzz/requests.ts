import fc from 'fast-check';
import type { Operation } from './operations.js';
import { junkString, uuidArb, valueOf, type GenOptions } from './values.js';
import { mutated } from './mutations.js';
import { stringifyDeep } from './json.js';
import { isUuid } from '../../lib/uuid.js';
import { nestsDeeperThan } from '../../lib/json-bounds.js';

/**
 * A generated request, as plain data (what the corpus stores). Ids of the world appear as `$ref:<kind>`
 * and credentials as a role, so a saved case replays against the world of any later run.
 */
export interface FuzzRequest {
  op: string;
  path: Record<string, string>;
  /** Query pairs, percent-encoded when sent; `rawQuery` is appended as is (malformed encodings). */
  query: [string, string][];
  rawQuery?: string;
  body?: { json: unknown; contentType?: string } | { raw: string; contentType: string };
  auth: Auth;
}
export type Auth = 'valid' | 'none' | 'bad-basic' | 'bad-bearer' | 'garbage' | 'consumer' | 'stranger' | 'cross';

const AUTH = fc.oneof(
  { weight: 24, arbitrary: fc.constant<Auth>('valid') },
  { weight: 1, arbitrary: fc.constantFrom<Auth>('none', 'bad-basic', 'bad-bearer', 'garbage', 'consumer', 'stranger', 'cross') },
);

const RAW_QUERIES = ['%', '%zz', 'limit=%E0%A4%A', 'a[b]=1', 'limit[]=1', '&&&', '=x', 'limit', 'since=1&since=2', '__proto__=1'];
const JUNK_JSON = ['{', '{"a":', '[1,]', 'nul', '"unterminated', '{"__proto__":{"polluted":1}}', '{"constructor":{"prototype":{"x":1}}}',
  '\ufeff{}', '{"a":1,"a":2}', '1e99999', '-', '[]', '"x"', 'true', '{}', `"${'x'.repeat(1024 * 1024)}"`]; // the last: over bodyLimit
const CONTENT_TYPES = ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/xml',
  'application/json; charset=latin1', 'application/json-patch+json', 'application/JSON', 'application/json; charset=utf-8'];

/** `arb` once in `n` times, else `usual` (fc.option's `freq` is the other way round: nil once in `freq`). */
function rarely<T, U>(arb: fc.Arbitrary<T>, usual: U, n: number): fc.Arbitrary<T | U> {
  return fc.oneof({ weight: n - 1, arbitrary: fc.constant(usual) }, { weight: 1, arbitrary: arb });
}

/** Every request shape for `op`: valid-looking mostly, mutated or junk otherwise. */
export function requestArb(op: Operation, o: GenOptions): fc.Arbitrary<FuzzRequest> {
  const path = fc.record(Object.fromEntries(op.pathParams.map((p) => [p.name, pathValue(p.name, o)])));
  const query = queryArb(op, o);
  const rawQuery = rarely(fc.constantFrom(...RAW_QUERIES), undefined, 12);
  return fc.record({ op: fc.constant(op.key), path, query, rawQuery, body: bodyArb(op, o), auth: AUTH }, { requiredKeys: ['op', 'path', 'query', 'body', 'auth'] })
    .filter((r) => o.hostile || !isHostile(r));
}

function pathValue(name: string, o: GenOptions): fc.Arbitrary<string> {
  return fc.oneof({ weight: 10, arbitrary: uuidArb(o, name.replace(/Id$/, '')) }, { weight: 1, arbitrary: junkString(o) });
}

function queryArb(op: Operation, o: GenOptions): fc.Arbitrary<[string, string][]> {
  // Each documented parameter: absent half the time, else mostly a meaningful value (hints.ts).
  const known = op.queryParams.map((p) => fc.option(
    fc.oneof({ weight: 6, arbitrary: valueOf(p.schema, o, p.name).map(asText) }, { weight: 1, arbitrary: junkString(o) })
      .map((v): [string, string] => [p.name, v]), { freq: p.required ? 12 : 2, nil: undefined }));
  // Sometimes a parameter the document does not know, or a documented one repeated (?limit=1&limit=2).
  const names = fc.oneof(fc.string({ maxLength: 8 }), fc.constantFrom('x', '__proto__', 'constructor', ...op.queryParams.map((p) => p.name)));
  const extra = rarely(fc.array(fc.tuple(names, junkString(o)), { minLength: 1, maxLength: 2 }), [], 8);
  return fc.tuple(fc.tuple(...known), extra).map(([k, e]) => [...k.filter((x): x is [string, string] => x !== undefined), ...e]);
}

const asText = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v) ?? '');

function bodyArb(op: Operation, o: GenOptions): fc.Arbitrary<FuzzRequest['body']> {
  const junk = fc.oneof(
    fc.jsonValue({ maxDepth: 3 }).map((json) => ({ json })),
    fc.constantFrom(...JUNK_JSON).map((raw) => ({ raw, contentType: 'application/json' })),
    fc.tuple(fc.constantFrom(...CONTENT_TYPES), fc.constantFrom('{}', 'a=1', '<x/>', '')).map(([contentType, raw]) => ({ raw, contentType })),
    ...(o.hostile ? [fc.constant({ raw: '', contentType: 'application/json' })] : []),
  );
  if (!op.body) return rarely(junk, undefined, 8);
  const valid = valueOf(op.body, o);
  return fc.oneof(
    { weight: 12, arbitrary: valid.map((json) => ({ json })) },
    { weight: 6, arbitrary: mutated(valid, o).map((json) => ({ json })) },
    { weight: 2, arbitrary: junk },
    { weight: 1, arbitrary: fc.constant(undefined) },
  );
}

/**
 * The classes the API refuses generically (api/plugins/input-guard.ts); generated unless FUZZ_HOSTILE=0: NUL
 * anywhere, JSON deeper than MAX_JSON_DEPTH levels, a 36-character path id that is not a UUID, an empty JSON body.
 */
export function isHostile(r: FuzzRequest): boolean {
  const text = stringifyDeep(r);
  if (text.includes('\\u0000')) return true;
  if (Object.values(r.path).some((v) => v.length === 36 && !isUuid(v))) return true;
  if (r.body && 'raw' in r.body && r.body.raw === '' && /json/i.test(r.body.contentType)) return true;
  return r.body !== undefined && 'json' in r.body && nestsDeeperThan(r.body.json);
}
