import { createHash, randomUUID } from 'node:crypto';

let cachedMs = -1;
let cachedHex = '';

/**
 * A UUID version 7 (RFC 9562 §5.7): the first 48 bits are the Unix time in ms, the rest random (74 bits) with
 * the version and variant bits. A message's id is made with its own timestamp, so the id alone finds it through the
 * messages' (device_id, ts, id) index in the day's partition of that time (uuid7Ms). Built from crypto.randomUUID (whose variant bits are already
 * RFC 9562's), replacing its first 12 hex digits with the time and its version digit with 7: several times cheaper
 * than the `uuid` package's v7 on the ingest path. Not monotonic within a millisecond; nothing orders by id alone.
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

/**
 * The id of a frame that carries a frame id: a UUID version 7 whose time is the frame's own timestamp (ms) and whose
 * other 74 bits are a hash of the device and frame id. A re-sent frame (same device, frame id and timestamp) gets the
 * same id, so the messages' one unique index, (device_id, ts, id), refuses the copy: idempotency needs no index of
 * its own (docs/operations/postgresql.md). A message id's time is its timestamp either way, so a message is found from
 * its id alone through that index (uuid7Ms).
 */
export function frameUuid(ms: number, deviceId: string, frameId: string): string {
  const h = createHash('md5').update(deviceId).update('\u0000').update(frameId).digest('hex');
  const t = ms.toString(16).padStart(12, '0');
  const variant = ((parseInt(h[3], 16) & 0x3) | 0x8).toString(16);
  return `${t.slice(0, 8)}-${t.slice(8, 12)}-7${h.slice(0, 3)}-${variant}${h.slice(4, 7)}-${h.slice(7, 19)}`;
}

/** The Unix time in ms a UUID version 7 carries (its first 48 bits); null for a string that is not one. */
export function uuid7Ms(id: string): number | null {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i.test(id)) return null;
  return parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
}
