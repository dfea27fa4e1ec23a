import { describe, expect, it } from 'vitest';
import { MAX_TIME_MS, parseInstant, parseTimeParam, TIME_RANGE } from '../../lib/time.js';

describe('parseInstant', () => {
  it.each([
    ['2014-09-07T12:32:57.893-05:00', Date.UTC(2014, 8, 7, 17, 32, 57, 893)],
    ['2014-09-07T12:32:57.893123456Z', Date.UTC(2014, 8, 7, 12, 32, 57, 893)],
    ['2016-02-14T06:00-0600', Date.UTC(2016, 1, 14, 12)],
    ['2024-02-29T23:59:59Z', Date.UTC(2024, 1, 29, 23, 59, 59)],
    ['1970-01-01T00:00:00Z', 0],
    ['1970-01-01T01:00:00+01:00', 0],
    ['9999-12-31T23:59:59.999Z', MAX_TIME_MS],
    ['0', 0],
    ['1410111177893', 1410111177893],
    [1410111177893, 1410111177893],
  ])('reads %j', (text, ms) => {
    expect(parseInstant(text)).toEqual({ ms });
  });

  it('reads a date as UTC midnight only when asked to', () => {
    expect(parseInstant('2016-12-05', { dateOnly: true })).toEqual({ ms: Date.UTC(2016, 11, 5) });
    expect(parseInstant('2016-12-05')).toMatchObject({ problem: 'syntax' });
  });

  it.each([
    ['2026-02-30'], ['2025-02-29'], ['2026-04-31'], ['2026-13-01'], ['2026-00-10'], ['2026-01-00'],
    ['2026-02-30T00:00:00Z'], ['2026-01-01T24:00:00Z'], ['2026-01-01T23:60:00Z'], ['2026-01-01T23:59:60Z'],
    ['2026-01-01T00:00:00+24:00'], ['2026-01-01T00:00:00+01:60'],
  ])('refuses %j as no calendar date, never the day it rolls over to', (text) => {
    expect(parseInstant(text, { dateOnly: true })).toEqual({ problem: 'calendar', reason: 'is not a valid date' });
  });

  it.each([
    ['-8640000000000000'], ['8640000000000000'], [-8640000000000000], [8640000000000000], ['-1'], [-1], [MAX_TIME_MS + 1],
    ['1969-12-31T23:59:59.999Z'], ['1970-01-01T00:59:59+01:00'], ['0001-01-01T00:00:00Z'], ['0099-06-01'],
    ['9999-12-31T23:59:59.999-00:01'], ['9999999999999999'],
  ])('refuses %j as outside the range PostgreSQL holds and JavaScript writes', (value) => {
    expect(parseInstant(value, { dateOnly: true })).toEqual({ problem: 'range', reason: `is outside ${TIME_RANGE}` });
  });

  it.each([['yesterday'], [''], ['2026-1-01'], ['2026-01-01T00:00:00'], ['17e11'], ['0x10'], ['12345678901234567'], ['+275760-09-13T00:00:00.000Z'], [Number.NaN],
    [Number.POSITIVE_INFINITY], ['NaN'], ['Infinity'], [' 2026-01-01T00:00:00Z']])('refuses %j as no timestamp', (value) => {
    expect(parseInstant(value, { dateOnly: true })).toMatchObject({ problem: 'syntax' });
  });
});

describe('parseTimeParam', () => {
  it('gives a 400 message naming the parameter for each kind of refusal', () => {
    expect(() => parseTimeParam('since', 'yesterday'))
      .toThrow('since must be an ISO 8601 timestamp, a date (YYYY-MM-DD) or epoch milliseconds, got "yesterday"');
    expect(() => parseTimeParam('since', '2026-02-30')).toThrow('since "2026-02-30" is not a valid date');
    expect(() => parseTimeParam('until', '8640000000000000')).toThrow(`until "8640000000000000" is outside ${TIME_RANGE}`);
    expect(() => parseTimeParam('since', '-8640000000000000')).toThrow(`since "-8640000000000000" is outside ${TIME_RANGE}`);
    expect(() => parseTimeParam('since', 'x'.repeat(5000))).toThrow(`got "${'x'.repeat(60)}..."`);
  });

  it('reads what the API documents, trimmed, and nothing for an empty value', () => {
    expect(parseTimeParam('since', ' 2016-12-05 ')).toEqual(new Date('2016-12-05T00:00:00Z'));
    expect(parseTimeParam('since', '')).toBeUndefined();
    expect(parseTimeParam('since', undefined)).toBeUndefined();
  });
});
