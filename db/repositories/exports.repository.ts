import type { Knex } from 'knex';
import { carriedKeys, dataKeysOf, messageData, numAt } from '../message-data.sql.js';
import { csvRecord, type CsvCellSource } from '../export-csv.sql.js';

/**
 * Rows of one export page: few enough that what a page holds while it is read and written stays small (about 300 KB of
 * CSV text), many enough that the round trips are a small part of the time (docs/development/performance.md, export).
 */
export const EXPORT_PAGE_ROWS = 2_500;

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
 * Consecutive records of a CSV export, as PostgreSQL wrote them (db/export-csv.sql.ts): `text`, their text joined;
 * or, when it left one of them to the JavaScript writer, `records`: each record's text or that message. `rows`: how
 * many; `last`: the last one's place (the page's cursor).
 */
export interface CsvChunk { rows: number; text: string | null; records: (string | ExportRow)[] | null; last: ExportCursor }

/** Whose messages: one device's, or a vehicle's from the given devices while each was in it. */
export type ExportSource = { deviceId: string } | { vehicleId: string; deviceIds: string[] };

/**
 * `since` exclusive, `until` inclusive (as every list); `located`: only messages with a location, read as a track
 * (GPX, GeoJSON): their data is the speed alone, all a track point shows, not each message's data built and parsed.
 */
export interface ExportRange { since?: Date; until: Date; located?: boolean }

/** Where the previous page ended: its last message in (ts, id) order. */
export interface ExportCursor { ts: Date; id: string }

interface Row { id: string; device_id: string; ts: Date | string | number; lon: number | string | null; lat: number | string | null; data: Record<string, unknown> | null }
const num = (v: number | string | null) => (v === null ? null : Number(v));
const toRow = (r: Row): ExportRow => ({
  id: r.id, deviceId: r.device_id, timestamp: new Date(r.ts), lon: num(r.lon), lat: num(r.lat), data: r.data ?? {},
});

const STORED = 'm.id, m.device_id, m.ts, m.num, m.txt, m.location';
const COLUMNS = `m.id, m.device_id, m.ts, ST_X(m.location) AS lon, ST_Y(m.location) AS lat, ${messageData('m')} AS data`;
/** A track point's columns: vehicleSpeed is only ever a number in its slot (db/message-data.sql.ts). */
const TRACK = `m.id, m.device_id, m.ts, ST_X(m.location) AS lon, ST_Y(m.location) AS lat, ${numAt('m', 'vehicleSpeed')} AS speed`;
const toTrackRow = (r: Row & { speed: number | string | null }): ExportRow => ({
  ...toRow({ ...r, data: null }), data: r.speed === null ? {} : { vehicleSpeed: Number(r.speed) },
});

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
      const out = await rows(`SELECT ${r.located ? TRACK : COLUMNS} FROM (${q.sql}) m ORDER BY m.ts, m.id`, q.bindings, trx);
      return r.located ? (out as (Row & { speed: number | null })[]).map(toTrackRow) : out.map(toRow);
    },

    /**
     * The page after `after` as CSV records of the columns `cells`, written by PostgreSQL and joined `chunkRows` at a
     * time, so that the API reads a few strings a page, not a row object per message (docs/development/performance.md,
     * export). A chunk holding a message SQL cannot write as the JavaScript writer would comes as its records, that
     * message as an ExportRow for that writer.
     */
    async csvPage(s: ExportSource, r: ExportRange, after: ExportCursor | null, cells: readonly CsvCellSource[],
      o: { limit?: number; chunkRows: number }, trx: Knex = knex): Promise<CsvChunk[]> {
      const q = pageOf(s, r, after, o.limit ?? EXPORT_PAGE_ROWS);
      if (!q) return [];
      const out = await rows(`SELECT count(*) AS n, (array_agg(x.ts ORDER BY x.rn DESC))[1] AS last_ts,
          (array_agg(x.id ORDER BY x.rn DESC))[1] AS last_id,
          string_agg(x.line, '' ORDER BY x.rn) FILTER (WHERE NOT x.slow) AS text,
          json_agg(coalesce(to_json(x.line), json_build_object('id', x.id, 'device_id', x.device_id,
            'ts', floor(extract(epoch FROM x.ts) * 1000)::float8, 'lon', ST_X(x.location), 'lat', ST_Y(x.location),
            'data', message_data(x.num, x.txt, x.location))) ORDER BY x.rn) FILTER (WHERE x.slow) AS records
        FROM (SELECT n.*, bool_or(n.line IS NULL) OVER (PARTITION BY n.chunk) AS slow FROM (
          SELECT c.*, (c.rn - 1) / ?::int AS chunk FROM (
            -- OFFSET 0: the record is computed once, not again where it is tested
            SELECT ${csvRecord('m', cells)} AS line, row_number() OVER (ORDER BY m.ts, m.id) AS rn, m.*
            FROM (${q.sql}) m OFFSET 0) c) n) x
        GROUP BY x.chunk ORDER BY x.chunk`, [o.chunkRows, ...q.bindings], trx);
      type Out = { n: number | string; last_ts: Date | string; last_id: string; text: string | null; records: (string | Row)[] | null };
      return (out as unknown as Out[]).map((c) => ({
        rows: Number(c.n), text: c.text, last: { ts: new Date(c.last_ts), id: c.last_id },
        records: c.records && c.records.map((x) => (typeof x === 'string' ? x : toRow(x))),
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
