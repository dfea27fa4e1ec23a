// Array parameters in PostgreSQL's binary format. The ingest path binds a few arrays per frame (ids, timestamps,
// steps: one per column of a batch); sent as text, PostgreSQL parsed each element (array_in, then uuid_in,
// timestamptz_in, float8in), a sizeable part of the ingest path's work (docs/development/performance.md). The pg
// driver sends a Buffer as a binary parameter, and an object's toPostgres() result as its value, so an ArrayParam goes
// as the array's binary form (array_recv: each element copied, not parsed), and so does the PGlite client
// (db/prepared.ts runOnPglite); PGlite's own query(), left rows as arrays and COPY, takes the plain values (plainBinding),
// which it sends as text.

type ElementType = 'uuid' | 'timestamptz' | 'float8' | 'text' | 'bool';

/** Each element type's pg_type OID and bytes an element (null: its UTF-8 length). */
const ELEMENT: Record<ElementType, { oid: number; width: number | null }> = {
  uuid: { oid: 2950, width: 16 }, timestamptz: { oid: 1184, width: 8 }, float8: { oid: 701, width: 8 }, text: { oid: 25, width: null },
  bool: { oid: 16, width: 1 },
};
/** Each hex digit's value by its char code (-1: not a hex digit). */
const HEX = new Int8Array(128).fill(-1);
for (let c = 0; c < 16; c++) HEX['0123456789abcdef'.charCodeAt(c)] = HEX['0123456789ABCDEF'.charCodeAt(c)] = c;

/**
 * A uuid's text (8-4-4-4-12 hex digits, either case) as its 16 bytes at `at`, checked as it is read: one pass, where a
 * pattern test, the dashes cut out and a hex write each read it again (every frame carries a few uuids).
 */
function writeUuid(s: string, buf: Buffer, at: number): void {
  if (typeof s !== 'string' || s.length !== 36) notUuid(s);
  for (let i = 0, o = at; i < 36; i++) {
    if (i === 8 || i === 13 || i === 18 || i === 23) {
      if (s.charCodeAt(i) !== 45) notUuid(s);
      continue;
    }
    const hi = HEX[s.charCodeAt(i)], lo = HEX[s.charCodeAt(++i)];
    if (!(hi >= 0 && lo >= 0)) notUuid(s);
    buf[o++] = (hi << 4) | lo;
  }
}

/** writeUuid's refusal: a function of its own, not a closure made for every uuid written. */
function notUuid(s: unknown): never {
  throw new TypeError(`not a uuid: ${JSON.stringify(s).slice(0, 60)}`);
}
/** PostgreSQL's timestamp epoch (2000-01-01T00:00:00Z), in Unix ms. */
const PG_EPOCH_MS = 946_684_800_000;

type Element<T extends ElementType> = T extends 'uuid' | 'text' ? string : T extends 'timestamptz' ? Date : T extends 'float8' ? number : boolean;

/** A one-dimensional array parameter: binary (toPostgres) for the pg driver and the PGlite client, else its values (plainBinding). */
export class ArrayParam<T extends ElementType = ElementType> {
  constructor(readonly type: T, readonly values: readonly (Element<T> | null)[]) {}

  /** The values as the text-format drivers take them: timestamps as ISO text. */
  plain(): unknown[] {
    return this.type === 'timestamptz' ? this.values.map((v) => (v === null ? null : (v as Date).toISOString())) : [...this.values];
  }

  /** PostgreSQL's binary array: dimensions, null flag, element type, then each element's length and bytes. */
  toPostgres(): Buffer {
    const { type, values } = this;
    const { oid, width } = ELEMENT[type];
    let size = values.length ? 20 : 12;
    let nulls = 0;
    const texts = type === 'text' ? values.map((v) => (v === null ? null : Buffer.from(v as string, 'utf8'))) : null;
    for (let i = 0; i < values.length; i++) {
      if (values[i] === null) { nulls = 1; size += 4; } else size += 4 + (width ?? texts![i]!.length);
    }
    const buf = Buffer.allocUnsafe(size);
    buf.writeInt32BE(values.length ? 1 : 0, 0);
    buf.writeInt32BE(nulls, 4);
    buf.writeUInt32BE(oid, 8);
    if (!values.length) return buf;
    buf.writeInt32BE(values.length, 12);
    buf.writeInt32BE(1, 16);
    let at = 20;
    for (let i = 0; i < values.length; i++) {
      const v = values[i];
      if (v === null) { buf.writeInt32BE(-1, at); at += 4; continue; }
      const n = width ?? texts![i]!.length;
      buf.writeInt32BE(n, at);
      at += 4;
      switch (type) {
        case 'uuid': writeUuid(v as string, buf, at); break;
        case 'timestamptz': {
          const ms = (v as Date).getTime();
          if (!Number.isFinite(ms)) throw new TypeError('not a valid date');
          // microseconds since PostgreSQL's epoch, as a big-endian int64 (exact: |µs| < 2^53 for any JS date)
          const us = (ms - PG_EPOCH_MS) * 1000;
          const hi = Math.floor(us / 2 ** 32);
          buf.writeInt32BE(hi, at);
          buf.writeUInt32BE(us - hi * 2 ** 32, at + 4);
          break;
        }
        case 'float8': buf.writeDoubleBE(v as number, at); break;
        case 'bool': buf.writeUInt8(v ? 1 : 0, at); break;
        case 'text': texts![i]!.copy(buf, at); break;
      }
      at += n;
    }
    return buf;
  }
}

export const uuidArray = (values: readonly (string | null)[]) => new ArrayParam('uuid', values);
export const timestampArray = (values: readonly (Date | null)[]) => new ArrayParam('timestamptz', values);
export const float8Array = (values: readonly (number | null)[]) => new ArrayParam('float8', values);
export const textArray = (values: readonly (string | null)[]) => new ArrayParam('text', values);
export const boolArray = (values: readonly (boolean | null)[]) => new ArrayParam('bool', values);

/** A binding as the text-format drivers (PGlite, literal SQL) take it: an ArrayParam's plain values, else itself. */
export const plainBinding = (v: unknown): unknown => (v instanceof ArrayParam ? v.plain() : v);
