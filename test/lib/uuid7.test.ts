import { describe, expect, it } from 'vitest';
import { uuid7 } from '../../lib/uuid7.js';
import { isUuid } from '../../lib/uuid.js';

describe('uuid7', () => {
  it('carries the time in its first 48 bits, version 7 and the RFC 9562 variant', () => {
    const at = Date.UTC(2026, 10, 25, 12, 34, 56, 789);
    const id = uuid7(at);
    expect(isUuid(id)).toBe(true);
    expect(parseInt(id.slice(0, 8) + id.slice(9, 13), 16)).toBe(at);
    expect(id[14]).toBe('7');
    expect('89ab').toContain(id[19]);
  });

  it('orders ids of later milliseconds after earlier ones, and differs within one millisecond', () => {
    const ids = [uuid7(1_000), uuid7(1_000), uuid7(1_001), uuid7(2 ** 40)];
    expect(new Set(ids).size).toBe(4);
    expect(ids[0].slice(0, 13)).toBe(ids[1].slice(0, 13));
    expect(ids[1] < ids[2] && ids[2] < ids[3]).toBe(true);
  });
});
