/**
 * SQL for where a late span's re-derivation starts (the collisions and trouble-code statements): no earlier than
 * `maxAge` before the device's newest message, nor than its `maxN`-th newest message. `device`, `from`, `maxN` and
 * `maxAge` (an interval) are SQL expressions.
 *
 * The message bound is probed from the span's start: the device's messages are walked from the newest back (at most
 * `maxN`) and the walk stops at the first one before the start, which proves the span within the bound. A frame a few
 * messages late so reads a few index entries; only a span past the bound reads the `maxN` newest again to find where it
 * stops. The walk is an ordered scan with a LIMIT and no condition on `ts`: a probe `ts >= start ORDER BY ts OFFSET
 * maxN` is planned from the default estimate of a third of the device's rows, and when `maxN` is near that, as a bitmap
 * scan and sort of every message after the start.
 */
export function lateSpanStart(device: string, from: string, maxN: string, maxAge: string): string {
  return `(SELECT CASE
      WHEN EXISTS (SELECT 1 FROM (SELECT m.ts FROM messages m WHERE m.device_id = ${device} ORDER BY m.ts DESC LIMIT ${maxN}) y
        WHERE y.ts < a.lo) THEN a.lo
      ELSE greatest(a.lo, (SELECT m.ts FROM messages m WHERE m.device_id = ${device} ORDER BY m.ts DESC OFFSET ${maxN} - 1 LIMIT 1)) END
    FROM (SELECT greatest(${from}, (SELECT max(m.ts) FROM messages m WHERE m.device_id = ${device}) - ${maxAge}) AS lo OFFSET 0) a)`;
}
