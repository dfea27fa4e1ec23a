import { randomUUID } from 'node:crypto';

let cachedMs = -1;
let cachedHex = '';

/**
 * A UUID version 7 (RFC 9562 §5.7): the first 48 bits are the Unix time in ms, the rest random (74 bits) with
 * the version and variant bits. Message ids are made this way so that consecutive inserts land at the right edge
 * of the messages primary key instead of at a random leaf of it (a v4 key touches a random page per row once the
 * index outgrows memory). Built from crypto.randomUUID (whose variant bits are already RFC 9562's), replacing its
 * first 12 hex digits with the time and its version digit with 7: several times cheaper than the `uuid` package's v7
 * on the ingest path. Not monotonic within a millisecond; nothing orders by id alone.
 */
export function uuid7(now = Date.now()): string {
  if (now !== cachedMs) {
    cachedMs = now;
    const hex = now.toString(16).padStart(12, '0');
    cachedHex = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-7`;
  }
  const r = randomUUID();
  return cachedHex + r.slice(15);
}
