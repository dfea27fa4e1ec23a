import type { Knex } from 'knex';
import { carriedKeys, dataKeysOf, messageData } from '../message-data.sql.js';
import { csvRecord, type CsvCellSource } from '../export-csv.sql.js';

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

/**
 * A CSV export's record: its text as PostgreSQL wrote it (db/export-csv.sql.ts), or null with `message` the message
 * for the export's JavaScript writer to write; its (ts, id) is the page's cursor.
 */
export interface CsvRecord { line: string | null; id: string; ts: Date; message: ExportRow | null }

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

const STORED = 'm.id, m.device_id, m.ts, m.num, m.txt, m.location';
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
 * The stored columns (STORED) of the page after `after`, oldest first, as a statement to select from; null when the
 * source has no devices. A vehicle's: each interval's next messages by its own index range, then merged, never a sort
 * of the whole history.
 */
function pageOf(s: ExportSource, r: ExportRange, after: ExportCursor | null, limit: number): { sql: string; bindings: unknown[] } | null {
  const w = rangeOf(r, after);
  if (isDevice(s)) {
    return { sql: `SELECT ${STORED} FROM messages m WHERE m.device_id = ?::uuid AND ${w.sql} ORDER BY m.ts, m.id LIMIT ?`,
      bindings: [s.deviceId, ...w.bindings, limit] };
  }
  if (!s.deviceIds.length) return null;
  return { sql: `WITH ${INTERVALS}
    SELECT x.* FROM iv CROSS JOIN LATERAL (
      SELECT ${STORED} FROM messages m WHERE ${IN_INTERVAL} AND ${w.sql} ORDER BY m.ts, m.id LIMIT ?) x
    ORDER BY x.ts, x.id LIMIT ?`, bindings: [s.deviceIds, s.vehicleId, ...w.bindings, limit, limit] };
}

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
      const q = pageOf(s, r, after, limit);
      if (!q) return [];
      return (await rows(`SELECT ${COLUMNS} FROM (${q.sql}) m ORDER BY m.ts, m.id`, q.bindings, trx)).map(toRow);
    },

    /**
     * The page after `after` as CSV records of the columns `cells`, written by PostgreSQL; a message it cannot write
     * as the JavaScript writer would comes back as the message, for that writer (db/export-csv.sql.ts).
     */
    async csvPage(s: ExportSource, r: ExportRange, after: ExportCursor | null, cells: readonly CsvCellSource[],
      limit = EXPORT_PAGE_ROWS, trx: Knex = knex): Promise<CsvRecord[]> {
      const q = pageOf(s, r, after, limit);
      if (!q) return [];
      // OFFSET 0 keeps the record a column of its own, computed once, that the message's columns test
      const out = await rows(`SELECT c.line, c.id, c.ts, CASE WHEN c.line IS NULL THEN c.device_id END AS device_id,
          CASE WHEN c.line IS NULL THEN ST_X(c.location) END AS lon, CASE WHEN c.line IS NULL THEN ST_Y(c.location) END AS lat,
          CASE WHEN c.line IS NULL THEN message_data(c.num, c.txt, c.location) END AS data
        FROM (SELECT ${csvRecord('m', cells)} AS line, m.* FROM (${q.sql}) m OFFSET 0) c ORDER BY c.ts, c.id`, q.bindings, trx);
      return (out as (Row & { line: string | null })[]).map((x) => ({
        line: x.line, id: x.id, ts: new Date(x.ts), message: x.line === null ? toRow(x) : null,
      }));
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
