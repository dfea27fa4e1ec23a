import { describe, expect, it } from 'vitest';
import { holdsNul } from '../../lib/json-bounds.js';

describe('holdsNul', () => {
  it('finds U+0000 in a string at any depth, in values and in keys', () => {
    expect(holdsNul('a\u0000b')).toBe(true);
    expect(holdsNul({ a: { b: ['x', { c: 'y\u0000' }] } })).toBe(true);
    expect(holdsNul([[['\u0000']]])).toBe(true);
    expect(holdsNul({ ['k\u0000']: 1 })).toBe(true);
    expect(holdsNul(JSON.parse('{"fuelType":"Gas\\u0000oline"}'))).toBe(true);
  });

  it('passes everything else, including the six characters \\u0000 typed as text', () => {
    expect(holdsNul(null)).toBe(false);
    expect(holdsNul(12)).toBe(false);
    expect(holdsNul({ a: [1, 2, { b: 'text', c: null, d: true }] })).toBe(false);
    // a backslash followed by u0000 is storable text, not a NUL (JSON.stringify escapes the backslash)
    expect(holdsNul({ note: '\\u0000' })).toBe(false);
  });
});
