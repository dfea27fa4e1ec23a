import { prepared } from '../prepared.js';
import { float8Array, textArray, timestampArray, uuidArray } from '../binary-array.js';
import type { Knex } from 'knex';
import { vehicleAt } from '../vehicle-at.sql.js';
import { runParts, type PartRow, type SqlPart, type SqlStatement } from '../fused.js';
import { LATEST_MESSAGE, NEW_STEPS_CTES, type StepSource, type StoredStep } from '../distance/steps.sql.js';
import { storedData } from '../message-data.sql.js';
import { ensurePartitions } from '../partitions.js';
import { DEAD_LETTER_PARTITIONS, MESSAGE_PARTITIONS } from '../retention/time-tables.js';

/**
 * One telemetry message row as the gateway writes it: location as lon/lat, turned into a PostGIS point here; data and
 * the GPS fix's extras split into slots and other parameters (db/message-data.sql.ts storedData). The id carries the
 * timestamp (lib/uuid7.ts).
 */
export interface MessageRow {
  id: string;
  deviceId: string;
  timestamp: Date;
  kind: string;
  data: Record<string, unknown>;
  /** The GPS fix's extras (alt, speed, heading, hdop, satellites); null or absent when none. */
  gps?: Record<string, unknown> | null;
  lon: number | null;
  lat: number | null;
  /** What the frame carried beyond telemetry (vin, dtcs, battery, collision); null when nothing. */
  extra: Record<string, unknown> | null;
  receivedAt: Date;
}

export interface DeadLetterRow {
  deviceId: string | null;
  topic: string;
  frameIndex: number | null;
  reason: string;
  raw: Buffer | null;
  receivedAt: Date;
}

/** A dead_letters row as read back. */
interface DeadLetterStored {
  id: number | string; device_id: string | null; topic: string; frame_index: number | null; reason: string;
  raw: Uint8Array | null; received_at: Date;
}

/** A dead letter must always be storable: PostgreSQL text cannot hold U+0000. */
const noNul = (s: string) => s.replaceAll('\u0000', '\uFFFD');

/**
 * Bytes of a dead letter's `raw` kept: a frame is well under 1 KB (the catalog's longest string value is 1,024
 * characters), and what a letter is for, seeing what the device sent, needs its start. A longer one is cut, marked
 * with its full length, so that a payload refused frame by frame (one letter per frame, each of which could otherwise
 * hold the whole payload) stores a few KB per frame, not the payload's size times its number of frames.
 */
export const DEAD_LETTER_RAW_BYTES = 8 * 1024;
/** Characters of a dead letter's reason kept: one line; the decoder's reasons are well under 200. */
export const DEAD_LETTER_REASON_LENGTH = 300;

/** `raw` cut to DEAD_LETTER_RAW_BYTES, ending with `…[cut: <length> bytes]` when it was longer. */
function boundedRaw(raw: Buffer): Buffer {
  if (raw.length <= DEAD_LETTER_RAW_BYTES) return raw;
  const marker = Buffer.from(`…[cut: ${raw.length} bytes]`, 'utf8');
  return Buffer.concat([raw.subarray(0, DEAD_LETTER_RAW_BYTES - marker.length), marker]);
}

/** The reason on one line (runs of white space, newlines included, as one space), at most DEAD_LETTER_REASON_LENGTH characters. */
export function boundedReason(reason: string): string {
  const line = noNul(reason.length > 4 * DEAD_LETTER_REASON_LENGTH ? reason.slice(0, 4 * DEAD_LETTER_REASON_LENGTH) : reason)
    .replace(/\s+/g, ' ').trim();
  return line.length <= DEAD_LETTER_REASON_LENGTH ? line : `${line.slice(0, DEAD_LETTER_REASON_LENGTH - 1)}…`;
}

/**
 * What a database error says, for a dead letter's reason: its SQLSTATE and message, without the statement knex puts
 * before the message (`<sql> - <message>`), which a caller of the platform has no use for and which made each reason
 * as long as the ingest statements.
 */
export function storageReason(err: Error): string {
  const code = (err as { code?: unknown }).code;
  const sqlState = typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : null;
  const message = sqlState && err.message.includes(' - ') ? err.message.slice(err.message.lastIndexOf(' - ') + 3) : err.message;
  return sqlState ? `storage failed (${sqlState}): ${message}` : `storage failed: ${message}`;
}

export interface Association { deviceId: string; vehicleId: string; startedAt: Date }

// The batch travels as one parameter per column, whatever its size (PGlite takes one statement per call, and knex
// would otherwise bind 10 parameters per row): the scalar columns as arrays (each element read by its type's input
// function), every row's slots as one float8 array (a row's own taken by offset and length), `txt` and `extra` each as
// one JSON array parsed into jsonb once, a row's value taken by its position (JSON null for a row without one, SQL NULL
// once read). As one JSON array of row objects (jsonb_to_recordset), every row's keys would be sorted and its ids and
// timestamps read as jsonb strings, then converted again (docs/development/performance.md). `kind` is null for
// telemetry, the kind nearly every frame has (db/migrations/035_messages_compact.ts).
const BATCH_ROWS = `
  SELECT r.i, r.id, r.device_id, r.ts, nullif(r.kind, 'telemetry') AS kind,
    CASE WHEN r.num_len > 0 THEN j.num[r.num_at::int + 1 : r.num_at::int + r.num_len::int] END AS num,
    nullif(j.txt -> (r.i::int - 1), 'null') AS txt, nullif(j.extra -> (r.i::int - 1), 'null') AS extra, r.received_at,
    CASE WHEN r.lon IS NULL OR r.lat IS NULL THEN NULL ELSE ST_SetSRID(ST_MakePoint(r.lon, r.lat), 4326) END AS location
  FROM unnest(?::uuid[], ?::uuid[], ?::timestamptz[], ?::text[], ?::float8[], ?::float8[], ?::timestamptz[], ?::float8[],
    ?::float8[])
    WITH ORDINALITY AS r(id, device_id, ts, kind, lon, lat, received_at, num_at, num_len, i)
  CROSS JOIN (SELECT ?::float8[] AS num, ?::jsonb AS txt, ?::jsonb AS extra) j`;

/**
 * The batch's insert, each row with its distance step (db/distance/steps.sql.ts), and each batch device's newest
 * stored timestamp before it (a db/fused.ts statement: at ingest, the stages' early reads share its round trip). The
 * CTEs see the snapshot the statement started with, so `latest` never sees the rows `ins` adds. Frames already stored
 * (same device, timestamp and id: a re-sent frame's id is its first copy's) are skipped; the distance statement re-measures the message after one (its step took the
 * skipped frame for its predecessor).
 */
const INSERT_AFTER_LATEST: SqlStatement = {
  ctes: `
  latest AS (${LATEST_MESSAGE}),
  new_batch AS (${BATCH_ROWS}),
  ${NEW_STEPS_CTES.trim()},
  ins AS (
    INSERT INTO messages (id, device_id, ts, received_at, step_m, kind, num, txt, location, extra, step_source, step_vehicle_id)
    SELECT b.id, b.device_id, b.ts, b.received_at, s.meters, b.kind, b.num, b.txt, b.location, b.extra, s.source, s.vehicle_id
    FROM new_batch b JOIN new_steps s ON s.id = b.id
    ON CONFLICT (device_id, ts, id) DO NOTHING
    RETURNING id, step_m, step_source, step_vehicle_id)`,
  // One row of arrays: each stored row's position in the batch with its step, and the devices' newest timestamps. As a
  // row per message, its id, step and column names would each be written out as JSON by row_to_json; a position is a
  // number, and a frame the insert skipped is one whose position is absent.
  main: `
  SELECT s.*, l.* FROM
    (SELECT array_agg(b.i) AS positions, array_agg(n.step_m) AS meters, array_agg(n.step_source) AS sources,
      array_agg(n.step_vehicle_id) AS vehicles
    FROM new_batch b JOIN ins n ON n.id = b.id) s,
    (SELECT array_agg(device_id) AS devices, array_agg(latest) AS latest FROM latest WHERE latest IS NOT NULL) l`,
};

const INSERT_DEAD_LETTERS = `
  INSERT INTO dead_letters (device_id, topic, frame_index, reason, raw, received_at)
  SELECT r.device_id, r.topic, r.frame_index, r.reason, decode(r.raw, 'base64'), r.received_at
  FROM json_to_recordset(?::json) AS r(device_id text, topic text, frame_index integer, reason text, raw text,
    received_at timestamptz)`;

// For each device: the association in force at the batch's oldest message, and any that start within the batch.
/** associateAt, set-based: per row the association in force at `at` and the next one, then a move or an insert. */
const ASSOCIATE = `
  WITH v AS (SELECT * FROM json_to_recordset(?::json) AS v(device_id uuid, vehicle_id uuid, at timestamptz)),
  c AS (
    SELECT v.*, cur.vehicle_id AS current_vehicle, nx.id AS next_id, nx.vehicle_id AS next_vehicle
    FROM v
    LEFT JOIN LATERAL (SELECT ${vehicleAt('v.device_id', 'v.at')} AS vehicle_id) cur ON true
    LEFT JOIN LATERAL (SELECT dv.id, dv.vehicle_id FROM device_vehicles dv WHERE dv.device_id = v.device_id AND dv.started_at > v.at
      ORDER BY dv.started_at, dv.created_at LIMIT 1) nx ON true
    WHERE cur.vehicle_id IS DISTINCT FROM v.vehicle_id),
  moved AS (
    UPDATE device_vehicles dv SET started_at = c.at FROM c WHERE dv.id = c.next_id AND c.next_vehicle = c.vehicle_id RETURNING dv.id),
  added AS (
    INSERT INTO device_vehicles (id, device_id, vehicle_id, started_at, created_at)
    SELECT gen_random_uuid(), c.device_id, c.vehicle_id, c.at, clock_timestamp() FROM c
    WHERE c.next_vehicle IS DISTINCT FROM c.vehicle_id RETURNING id)
  SELECT (SELECT count(*) FROM moved) + (SELECT count(*) FROM added) AS changed`;

const ASSOCIATIONS = `
  SELECT b.device_id, a.vehicle_id, a.started_at
  FROM unnest(?::uuid[], ?::timestamptz[], ?::timestamptz[]) AS b(device_id, min_ts, max_ts)
  JOIN LATERAL (
    (SELECT vehicle_id, started_at, created_at FROM device_vehicles
      WHERE device_id = b.device_id AND started_at <= b.min_ts ORDER BY started_at DESC, created_at DESC LIMIT 1)
    UNION ALL
    (SELECT vehicle_id, started_at, created_at FROM device_vehicles
      WHERE device_id = b.device_id AND started_at > b.min_ts AND started_at <= b.max_ts)
  ) AS a ON true
  ORDER BY b.device_id, a.started_at, a.created_at`;

/**
 * The rows as BATCH_ROWS's parameters, column by column: the scalar columns as binary arrays (db/binary-array.ts), the
 * slots as one float8 array with each row's offset and length, txt and extra as one JSON array each.
 */
function messageColumns(rows: MessageRow[]): unknown[] {
  const n = rows.length;
  const ids = new Array<string>(n), devices = new Array<string>(n), ts = new Array<Date>(n);
  const kinds = new Array<string>(n), lons = new Array<number | null>(n), lats = new Array<number | null>(n);
  const received = new Array<Date>(n), txt = new Array<unknown>(n), extra = new Array<unknown>(n);
  const numAt = new Array<number>(n), numLen = new Array<number>(n), num: (number | null)[] = [];
  for (let i = 0; i < n; i++) {
    const r = rows[i];
    ids[i] = r.id; devices[i] = r.deviceId; ts[i] = r.timestamp; kinds[i] = r.kind;
    lons[i] = r.lon; lats[i] = r.lat; received[i] = r.receivedAt; extra[i] = r.extra;
    const stored = storedData(r.data, r.gps);
    txt[i] = stored.txt;
    numAt[i] = num.length;
    numLen[i] = stored.num?.length ?? 0;
    if (stored.num) for (const v of stored.num) num.push(v);
  }
  return [uuidArray(ids), uuidArray(devices), timestampArray(ts), textArray(kinds), float8Array(lons), float8Array(lats),
    timestampArray(received), float8Array(numAt), float8Array(numLen), float8Array(num), JSON.stringify(txt), JSON.stringify(extra)];
}

/** What the insert stored: each new message's step by id (duplicates skipped are absent), the devices' previous newest timestamps. */
export interface StoredBatch { inserted: Map<string, StoredStep>; latest: Map<string, Date> }

/**
 * The insert part's one row: the stored messages' 1-based positions in the batch with their steps (parallel arrays),
 * and each device's previous newest timestamp (null when none was read).
 */
type InsertedRow = {
  positions: number[] | null; meters: number[]; sources: StepSource[]; vehicles: (string | null)[];
  devices: string[] | null; latest: string[];
};

/** A message the caller knows is stored: a device's newest as far as it knows (LATEST_MESSAGE's hint). */
export interface StoredRef { ts: Date; id: string }

/** LATEST_MESSAGE's parameters: the devices and their hints (absent: none). */
const latestBindings = (deviceIds: readonly string[], hints: readonly (StoredRef | undefined)[] = []) =>
  [uuidArray(deviceIds), timestampArray(deviceIds.map((_, i) => hints[i]?.ts ?? null)), uuidArray(deviceIds.map((_, i) => hints[i]?.id ?? null))];

/**
 * The batch's insert with its devices' previous newest timestamps, as a db/fused.ts part (storedBatch reads its rows);
 * `hints`: each device's newest stored message as the caller knows it (LATEST_MESSAGE), in `deviceIds`' order.
 */
export function insertPart(rows: MessageRow[], deviceIds: string[], hints?: readonly (StoredRef | undefined)[]): SqlPart {
  return { statement: INSERT_AFTER_LATEST, bindings: [...latestBindings(deviceIds, hints), ...messageColumns(rows)] };
}

/** The messages insertPart stored (of `rows`, the rows it was given), with their steps, and the devices' previous newest timestamps. */
export function storedBatch(parts: PartRow[] | null, rows: readonly MessageRow[]): StoredBatch {
  const inserted = new Map<string, StoredStep>();
  const latest = new Map<string, Date>();
  const r = parts?.[0] as InsertedRow | undefined;
  if (!r) return { inserted, latest };
  const positions = r.positions ?? [];
  for (let k = 0; k < positions.length; k++) {
    inserted.set(rows[positions[k] - 1].id, { meters: r.meters[k], source: r.sources[k], vehicleId: r.vehicles[k] });
  }
  const devices = r.devices ?? [];
  for (let k = 0; k < devices.length; k++) latest.set(devices[k], new Date(r.latest[k]));
  return { inserted, latest };
}

// a row a device of the batch once devices have vehicles: column by column (db/fused.ts)
const ASSOCIATIONS_STATEMENT: SqlStatement = { ctes: '', main: ASSOCIATIONS, columns: ['device_id', 'vehicle_id', 'started_at'] };
/** ASSOCIATIONS' bindings: the spans column by column, as binary arrays (cheaper to read than one JSON text). */
const spanColumns = (spans: { deviceId: string; min: Date; max: Date }[]) =>
  [uuidArray(spans.map((s) => s.deviceId)), timestampArray(spans.map((s) => s.min)), timestampArray(spans.map((s) => s.max))];
type AssociationRow = { device_id: string; vehicle_id: string; started_at: Date | string };
const toAssociation = (r: AssociationRow): Association => ({ deviceId: r.device_id, vehicleId: r.vehicle_id, startedAt: new Date(r.started_at) });

/** associationsDuring as a db/fused.ts part (associationsOf reads its rows). */
export function associationsPart(spans: { deviceId: string; min: Date; max: Date }[]): SqlPart | null {
  return spans.length ? { statement: ASSOCIATIONS_STATEMENT, bindings: spanColumns(spans) } : null;
}

export const associationsOf = (rows: PartRow[]): Association[] => (rows as AssociationRow[]).map(toAssociation);

/** SQL of the ingest pipeline (gateway/): batched inserts of messages and dead letters, vehicle associations. */
export function ingestRepository(knex: Knex) {
  return {
    /**
     * Inserts the batch in one statement, as the gateway does (each message with its distance step); frames already
     * stored (same device and frame id) are skipped. Returns what was stored (storedBatch).
     */
    async insertMessages(rows: MessageRow[], trx: Knex = knex): Promise<StoredBatch> {
      if (!rows.length) return { inserted: new Map(), latest: new Map() };
      await ensurePartitions(trx, MESSAGE_PARTITIONS, rows.map((r) => r.timestamp));
      const [stored] = await runParts(trx, [insertPart(rows, [...new Set(rows.map((r) => r.deviceId))])]);
      return storedBatch(stored, rows);
    },

    /** Stores dead letters, each bounded: `raw` to DEAD_LETTER_RAW_BYTES, `reason` to one line (boundedReason). */
    async insertDeadLetters(rows: DeadLetterRow[], trx: Knex = knex): Promise<void> {
      if (!rows.length) return;
      const json = rows.map((r) => ({
        device_id: r.deviceId && noNul(r.deviceId), topic: noNul(r.topic), frame_index: r.frameIndex, reason: boundedReason(r.reason),
        raw: r.raw ? boundedRaw(r.raw).toString('base64') : null, received_at: r.receivedAt.toISOString(),
      }));
      await ensurePartitions(trx, DEAD_LETTER_PARTITIONS, rows.map((r) => r.receivedAt));
      await prepared(trx, INSERT_DEAD_LETTERS, [JSON.stringify(json)]);
    },

    /**
     * The newest stored message timestamp of each device (absent when it has none): what the insert reads as `latest`,
     * with the same hints (LATEST_MESSAGE).
     */
    async latestTimestamps(deviceIds: string[], trx: Knex = knex, hints?: readonly (StoredRef | undefined)[]): Promise<Map<string, Date>> {
      if (!deviceIds.length) return new Map();
      const result = await prepared(trx, LATEST_MESSAGE, latestBindings(deviceIds, hints));
      const rows = result.rows as { device_id: string; latest: Date | null }[];
      return new Map(rows.filter((r) => r.latest).map((r) => [r.device_id, new Date(r.latest!)]));
    },

    /** Associations of each device that apply to messages between min and max (inclusive), oldest first. */
    async associationsDuring(spans: { deviceId: string; min: Date; max: Date }[], trx: Knex = knex): Promise<Association[]> {
      if (!spans.length) return [];
      const result = await prepared(trx, ASSOCIATIONS, spanColumns(spans));
      return (result.rows as AssociationRow[]).map(toAssociation);
    },

    /**
     * Records that the device was in the vehicle from `at` on (a new association when the VIN
     * changes). A late frame lands where it belongs: when the vehicle is already the one in force at `at`
     * nothing changes; when the next association is the same vehicle, it is moved back to `at` instead of
     * being repeated. Returns true when the device's history changed.
     */
    async associateAt(deviceId: string, vehicleId: string, at: Date, trx: Knex = knex): Promise<boolean> {
      return (await this.associateMany([{ deviceId, vehicleId, at }], trx)) > 0;
    },

    /** associateAt for several devices at once (one row per device): one statement; how many histories changed. */
    async associateMany(rows: { deviceId: string; vehicleId: string; at: Date }[], trx: Knex = knex): Promise<number> {
      if (!rows.length) return 0;
      const json = rows.map((r) => ({ device_id: r.deviceId, vehicle_id: r.vehicleId, at: r.at.toISOString() }));
      const { rows: out } = await prepared(trx, ASSOCIATE, [JSON.stringify(json)]);
      return Number(out[0].changed);
    },

    /** Dead letters of a device, newest first (operators and tests read them; no API serves them yet). */
    async deadLetters(deviceId: string, limit = 100, trx: Knex = knex): Promise<(DeadLetterRow & { id: number })[]> {
      const rows = await trx('dead_letters').select('id', 'device_id', 'topic', 'frame_index', 'reason', 'raw', 'received_at')
        .where('device_id', deviceId).orderBy('id', 'desc').limit(limit);
      return rows.map((r: DeadLetterStored) => ({
        id: Number(r.id), deviceId: r.device_id, topic: r.topic, frameIndex: r.frame_index, reason: r.reason,
        raw: r.raw ? Buffer.from(r.raw) : null, receivedAt: r.received_at,
      }));
    },
  };
}
export type IngestRepository = ReturnType<typeof ingestRepository>;
