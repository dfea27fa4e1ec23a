import { ValidationError } from './errors.js';

/**
 * Instants taken from outside (query parameters, bodies, device frames): 1970-01-01T00:00:00.000Z through
 * 9999-12-31T23:59:59.999Z. PostgreSQL's timestamptz holds them all and Date#toISOString writes them with a
 * four-digit year; JavaScript's own range (±8.64e15 ms, years −271821..275760) is wider than both, and PostgreSQL
 * rejects its edges ("time zone displacement out of range"), so parseInstant refuses an instant outside this range
 * before it reaches the database (a 400, or a refused frame, not a failed statement).
 */
export const MIN_TIME_MS = 0;
export const MAX_TIME_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);
export const TIME_RANGE = '1970-01-01T00:00:00.000Z..9999-12-31T23:59:59.999Z';

/** ISO 8601 date-time with a time zone: seconds and up to 9 fractional digits optional, offset `±hh:mm` or `±hhmm`. */
const ISO = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(?:Z|([+-])(\d{2}):?(\d{2}))$/i;
const DATE_ONLY = /^(\d{4})-(\d{2})-(\d{2})$/;
const EPOCH_MS = /^-?\d{1,16}$/;

/** An instant as epoch milliseconds, or why the text is none: its form, its calendar, or the range. */
export type Instant = { ms: number } | { problem: 'syntax' | 'calendar' | 'range'; reason: string };

const SYNTAX = { problem: 'syntax', reason: 'is not a timestamp' } as const;
const CALENDAR = { problem: 'calendar', reason: 'is not a valid date' } as const;
const RANGE = { problem: 'range', reason: `is outside ${TIME_RANGE}` } as const;

const inRange = (ms: number): Instant => (ms >= MIN_TIME_MS && ms <= MAX_TIME_MS ? { ms } : RANGE);
const daysIn = (year: number, month: number) => new Date(Date.UTC(year, month, 0)).getUTCDate();

/** The instant of calendar fields, each checked (February 30th or 24:00 is no date, not the next one). */
function fromFields(f: (string | undefined)[], offset?: { sign: string; h: string; m: string }): Instant {
  const [y, mo, d, h = 0, mi = 0, s = 0] = f.slice(0, 6).map((v) => (v === undefined ? 0 : Number(v)));
  if (y < 1000) return RANGE; // before the range, and Date.UTC reads years 0..99 as 1900..1999
  if (mo < 1 || mo > 12 || d < 1 || d > daysIn(y, mo) || h > 23 || mi > 59 || s > 59) return CALENDAR;
  const oh = offset ? Number(offset.h) : 0;
  const om = offset ? Number(offset.m) : 0;
  if (oh > 23 || om > 59) return CALENDAR;
  const frac = f[6] === undefined ? 0 : Number(f[6].slice(0, 3).padEnd(3, '0'));
  const shift = (offset?.sign === '-' ? -1 : 1) * (oh * 60 + om) * 60_000;
  return inRange(Date.UTC(y, mo - 1, d, h, mi, s, frac) - shift);
}

/**
 * The one parser of instants from outside, for the API and the gateway: epoch milliseconds (a number, or up to 16
 * digits), an ISO 8601 date-time with a time zone, and with `dateOnly` a `YYYY-MM-DD` date (UTC midnight). The
 * calendar is checked field by field, and the instant must be within TIME_RANGE.
 */
export function parseInstant(value: string | number, opts: { dateOnly?: boolean } = {}): Instant {
  if (typeof value === 'number') return Number.isFinite(value) ? inRange(value) : SYNTAX;
  if (EPOCH_MS.test(value)) return inRange(Number(value));
  const iso = ISO.exec(value);
  if (iso) return fromFields(iso.slice(1, 8), iso[8] ? { sign: iso[8], h: iso[9], m: iso[10] } : undefined);
  const date = opts.dateOnly ? DATE_ONLY.exec(value) : null;
  return date ? fromFields(date.slice(1, 4)) : SYNTAX;
}

/**
 * Parses a `since`/`until` style value: ISO 8601, `YYYY-MM-DD` (UTC midnight) or epoch milliseconds, through
 * parseInstant. Empty or absent → undefined (the SDK sends `since=`); anything else it refuses is a 400
 * naming the parameter.
 */
export function parseTimeParam(name: string, value: unknown): Date | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  const text = String(value).trim();
  const shown = text.length > 60 ? `${text.slice(0, 60)}...` : text;
  const r = parseInstant(text, { dateOnly: true });
  if ('ms' in r) return new Date(r.ms);
  if (r.problem === 'syntax') {
    throw new ValidationError(`${name} must be an ISO 8601 timestamp, a date (YYYY-MM-DD) or epoch milliseconds, got "${shown}"`);
  }
  throw new ValidationError(`${name} "${shown}" ${r.reason}`);
}

/** Truncates to whole milliseconds: every stored timestamp has ms precision so `until = last − 1 ms` pages exactly. */
export function toMs(date: Date): Date {
  return new Date(Math.floor(date.getTime()));
}

export const EPOCH = new Date(0);

export function iso(date: Date | string | null | undefined): string | null {
  if (date === null || date === undefined) return null;
  return (date instanceof Date ? date : new Date(date)).toISOString();
}
