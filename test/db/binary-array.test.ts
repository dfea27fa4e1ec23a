import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDb } from '../helpers/db.js';
import { pgliteValue, prepared } from '../../db/prepared.js';
import { ArrayParam, boolArray, float8Array, textArray, timestampArray, uuidArray } from '../../db/binary-array.js';

let db: Awaited<ReturnType<typeof createTestDb>>;
beforeAll(async () => { db = await createTestDb(); });
afterAll(async () => { await db?.close(); });

/** What PostgreSQL received, element by element as text (null as null), through a named statement and an unnamed one. */
async function received(param: ArrayParam, type: string): Promise<(string | null)[][]> {
  const sql = `SELECT array_to_json(x::text[]) AS a, cardinality(x) AS n FROM (SELECT ?::${type}[] AS x) s`;
  const named = (await prepared(db.knex, sql, [param])).rows[0];
  const unnamed = (await db.knex.raw(sql, [param as never])).rows[0];
  const out = [named, unnamed].map((r: any) => (typeof r.a === 'string' ? JSON.parse(r.a) : r.a) ?? []);
  for (const [k, r] of [named, unnamed].entries()) expect(Number(r.n ?? 0), `cardinality, ${k ? 'unnamed' : 'named'}`).toBe(out[k].length);
  return out;
}

describe('array parameters (db/binary-array.ts), on either driver', () => {
  it('delivers uuids, nulls and an empty array as given', async () => {
    const ids = ['00000000-0000-4000-8000-000000000001', 'FFFFFFFF-ffff-4fff-bfff-ffffffffffff', null, '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b'];
    const want = ids.map((v) => v && v.toLowerCase());
    expect(await received(uuidArray(ids), 'uuid')).toEqual([want, want]);
    expect(await received(uuidArray([]), 'uuid')).toEqual([[], []]);
  });

  it('delivers timestamps to the millisecond, before and after PostgreSQL\'s epoch', async () => {
    const dates = [new Date('2026-11-28T09:00:00.123Z'), new Date('1999-12-31T23:59:59.999Z'), new Date('1970-01-01T00:00:00.000Z'),
      null, new Date('2000-01-01T00:00:00.001Z'), new Date('2199-12-31T23:59:59.999Z')];
    const [named, unnamed] = await received(timestampArray(dates), 'timestamptz');
    for (const got of [named, unnamed]) {
      expect(got.map((v) => (v === null ? null : new Date(v).getTime()))).toEqual(dates.map((d) => d && d.getTime()));
    }
  });

  it('delivers floats exactly, with nulls, infinities and NaN', async () => {
    const xs = [0, -0.5, 32.7767123456789, 1e-300, -1.7976931348623157e308, null, Infinity, -Infinity, NaN];
    const [named, unnamed] = await received(float8Array(xs), 'float8');
    for (const got of [named, unnamed]) expect(got.map((v) => (v === null ? null : Number(v)))).toEqual(xs);
  });

  it('delivers text with what a text array literal escapes, and booleans', async () => {
    const texts = ['plain', 'NULL', 'a"b', 'back\\slash', 'comma,brace{}', ' spaced ', 'ünï😀', null, ''];
    expect(await received(textArray(texts), 'text')).toEqual([texts, texts]);
    expect(await received(boolArray([true, false, null]), 'bool')).toEqual([['true', 'false', null], ['true', 'false', null]]);
  });

  it('delivers long and short jsonb, json and text parameters as given (on PGlite the long ones as their bytes)', async () => {
    const doc = { kind: 'ünï😀 "quoted" \\ back', rows: Array.from({ length: 60 }, (_, i) => ({ i, x: i / 7, s: `é${i}` })) };
    const long = JSON.stringify(doc);
    expect(long.length).toBeGreaterThan(256);
    for (const text of [long, JSON.stringify({ a: 'é' })]) {
      const sql = 'SELECT ?::jsonb AS b, ?::json::text AS j, ?::text AS t, octet_length(?::text) AS n';
      for (const run of [() => prepared(db.knex, sql, [text, text, text, text]), () => db.knex.raw(sql, [text, text, text, text])]) {
        const r = (await run()).rows[0] as Record<string, unknown>;
        expect(r.b).toEqual(JSON.parse(text));
        expect(r.j).toBe(text);
        expect(r.t).toBe(text);
        expect(Number(r.n)).toBe(Buffer.byteLength(text));
      }
    }
  });

  it('goes to PGlite in binary where it can: arrays, bytes, long text by its UTF-8 bytes (jsonb after its version byte)', () => {
    const p = { serializers: { 25: (v: unknown) => `text:${v}`, 3802: (v: unknown) => `jsonb:${v}` } };
    const long = `"${'é'.repeat(300)}"`;
    const jsonb = pgliteValue(p, long, 3802) as Uint8Array;
    expect([jsonb[0], Buffer.from(jsonb.subarray(1)).toString('utf8')]).toEqual([1, long]);
    expect(Buffer.from(pgliteValue(p, long, 25) as Uint8Array).toString('utf8')).toBe(long);
    expect(pgliteValue(p, '"short"', 3802)).toBe('jsonb:"short"');
    expect(pgliteValue(p, long, 23)).toBe(long); // an int parameter: as text (no serializer here: String)
    const bytes = Buffer.from([0, 255]);
    expect(pgliteValue(p, bytes, 17)).toBe(bytes);
    expect(pgliteValue(p, uuidArray(['00000000-0000-4000-8000-000000000001']), 2951)).toEqual(uuidArray(['00000000-0000-4000-8000-000000000001']).toPostgres());
    expect(pgliteValue(p, null, 25)).toBeNull();
  });

  it('delivers bytes as given, every byte value', async () => {
    const bytes = Buffer.from(Array.from({ length: 600 }, (_, i) => (i * 7) % 256));
    const r = (await prepared(db.knex, 'SELECT ?::bytea AS b, octet_length(?::bytea) AS n', [bytes, bytes])).rows[0] as Record<string, unknown>;
    expect(Buffer.from(r.b as Uint8Array).equals(bytes)).toBe(true);
    expect(Number(r.n)).toBe(600);
  });

  it('refuses what is not a uuid or a date before sending anything', () => {
    for (const bad of ['not-a-uuid', '00000000-0000-4000-8000-00000000000g', '0000000000-00-4000-8000-000000000000',
      '00000000-0000-4000-8000-00000000000é', '00000000-0000-4000-8000-0000000000001', '{0000000-0000-4000-8000-000000000000}']) {
      expect(() => uuidArray(['00000000-0000-4000-8000-000000000001', bad]).toPostgres(), bad).toThrow(/not a uuid/);
    }
    expect(() => timestampArray([new Date(Number.NaN)]).toPostgres()).toThrow(/not a valid date/);
  });
});
