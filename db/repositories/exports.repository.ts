import type { Knex } from 'knex';
import { carriedKeys, dataKeysOf, messageData } from '../message-data.sql.js';

/**
 * Rows of one export page: few enough that a page, parsed and written out, stays a few MB, many enough that the
 * round trips are a small part of the time (docs/development/performance.md, export).
 */
export const EXPORT_PAGE_ROWS = 5_000;

/** A stored message as an export writes it. */
export interface ExportRow {
  id: string;
  deviceId: string;
  timestamp: Date;
  /** Degrees (WGS 84), null without a location. */
  lon: number | null;
  lat: number | null;
  /** As the API shows it: catalog keys, `location` (GeoJSON Point), `accel`. */
  data: Record<string, unknown>;
}

/** Whose messages: one device's, or a vehicle's from the given devices while each was in it. */
export type ExportSource = { deviceId: string } | { vehicleId: string; deviceIds: string[] };

/** `since` exclusive, `until` inclusive (as every list); `located`: only messages with a location (GPX, GeoJSON). */
export interface ExportRange { since?: Date; until: Date; located?: boolean }

/** Where the previous page ended: its last message in (ts, id) order. */
export interface ExportCursor { ts: Date; id: string }

interface Row { id: string; device_id: string; ts: Date | string; lon: number | string | null; lat: number | string | null; data: Record<string, unknown> | null }
const num = (v: number | string | null) => (v === null ? null : Number(v));
const toRow = (r: Row): ExportRow => ({
  id: r.id, deviceId: r.device_id, timestamp: new Date(r.ts), lon: num(r.lon), lat: num(r.lat), data: r.data ?? {},
});

const COLUMNS = `m.id, m.device_id, m.ts, ST_X(m.location) AS lon, ST_Y(m.location) AS lat, ${messageData('m')} AS data`;

/**
 * The vehicle's intervals on each of the given devices: from an association's start to that device's next one (none:
 * open), so that a message belongs to the vehicle exactly when vehicleAt (db/vehicle-at.sql.ts) names it. Two
 * associations starting together: the older one's interval is empty, the newer one's counts, as vehicleAt orders them.
 */
const INTERVALS = `iv AS (SELECT w.device_id, w.from_ts, w.to_ts FROM (
    SELECT dv.device_id, dv.vehicle_id, dv.started_at AS from_ts,
      coalesce(lead(dv.started_at) OVER (PARTITION BY dv.device_id ORDER BY dv.started_at, dv.created_at), 'infinity') AS to_ts
    FROM device_vehicles dv WHERE dv.device_id = ANY(?::uuid[])) w
  WHERE w.vehicle_id = ?::uuid AND w.to_ts > w.from_ts)`;
const IN_INTERVAL = 'm.device_id = iv.device_id AND m.ts >= iv.from_ts AND m.ts < iv.to_ts';

/**
 * The range and cursor as SQL conditions on `m` with their bindings. The cursor is `ts >= last` (an index bound)
 * and, within the last page's own millisecond, an id after the last one.
 */
function rangeOf(r: ExportRange, after: ExportCursor | null): { sql: string; bindings: unknown[] } {
  const parts = ['m.ts <= ?'];
  const bindings: unknown[] = [r.until];
  if (r.since) { parts.push('m.ts > ?'); bindings.push(r.since); }
  if (r.located) parts.push('m.location IS NOT NULL');
  if (after) { parts.push('m.ts >= ? AND (m.ts > ? OR m.id > ?::uuid)'); bindings.push(after.ts, after.ts, after.id); }
  return { sql: parts.join(' AND '), bindings };
}

const isDevice = (s: ExportSource): s is { deviceId: string } => 'deviceId' in s;

/**
 * Reads for exports (api/modules/exports): a device's or a vehicle's messages oldest first, a page at a time by
 * keyset in (ts, id) order, so each page is an index range whatever the export's size; their count; the data keys
 * present. Each page is its own statement: a long export holds no connection or snapshot while the client reads.
 */
export function exportsRepository(knex: Knex) {
  const rows = async (sql: string, bindings: unknown[], trx: Knex) => ((await trx.raw(sql, bindings as Knex.RawBinding[])).rows as Row[]);
  return {
    /** The page after `after` (null: the first), at most `limit` messages, oldest first. */
    async page(s: ExportSource, r: ExportRange, after: ExportCursor | null, limit = EXPORT_PAGE_ROWS, trx: Knex = knex): Promise<ExportRow[]> {
      const w = rangeOf(r, after);
      if (isDevice(s)) {
        return (await rows(`SELECT ${COLUMNS} FROM messages m WHERE m.device_id = ?::uuid AND ${w.sql} ORDER BY m.ts, m.id LIMIT ?`,
          [s.deviceId, ...w.bindings, limit], trx)).map(toRow);
      }
      if (!s.deviceIds.length) return [];
      // each interval's next messages by its own index range, then merged: never a sort of the whole history
      return (await rows(`WITH ${INTERVALS}
        SELECT x.* FROM iv CROSS JOIN LATERAL (
          SELECT ${COLUMNS} FROM messages m WHERE ${IN_INTERVAL} AND ${w.sql} ORDER BY m.ts, m.id LIMIT ?) x
        ORDER BY x.ts, x.id LIMIT ?`, [s.deviceIds, s.vehicleId, ...w.bindings, limit, limit], trx)).map(toRow);
    },

    /** How many messages the export holds (HEAD's X-Total-Count): an index range count. */
    async count(s: ExportSource, r: ExportRange, trx: Knex = knex): Promise<number> {
      const w = rangeOf(r, null);
      const out = isDevice(s)
        ? await rows(`SELECT count(*) AS n FROM messages m WHERE m.device_id = ?::uuid AND ${w.sql}`, [s.deviceId, ...w.bindings], trx)
        : s.deviceIds.length
          ? await rows(`WITH ${INTERVALS} SELECT count(*) AS n FROM iv JOIN messages m ON ${IN_INTERVAL} WHERE ${w.sql}`,
            [s.deviceIds, s.vehicleId, ...w.bindings], trx)
          : [{ n: 0 }];
      return Number((out[0] as unknown as { n: number | string }).n);
    },

    /**
     * The data keys present in the range (the CSV's columns): one pass over the range in the database, reading the
     * stored columns (carriedKeys), not each message's data built.
     */
    async keys(s: ExportSource, r: ExportRange, trx: Knex = knex): Promise<Set<string>> {
      const w = rangeOf(r, null);
      const keysOf = `SELECT DISTINCT k.key FROM messages m CROSS JOIN LATERAL (${carriedKeys('m')}) AS k(key)`;
      const out = isDevice(s)
        ? await rows(`${keysOf} WHERE m.device_id = ?::uuid AND ${w.sql}`, [s.deviceId, ...w.bindings], trx)
        : s.deviceIds.length
          ? await rows(`WITH ${INTERVALS} ${keysOf} JOIN iv ON ${IN_INTERVAL} WHERE ${w.sql}`, [s.deviceIds, s.vehicleId, ...w.bindings], trx)
          : [];
      return dataKeysOf((out as unknown as { key: string }[]).map((k) => k.key));
    },
  };
}
export type ExportsRepository = ReturnType<typeof exportsRepository>;
