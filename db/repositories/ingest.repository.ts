import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';

/** One telemetry message row as the gateway writes it (location as lon/lat, turned into a PostGIS point here). */
export interface MessageRow {
  id: string;
  deviceId: string;
  timestamp: Date;
  frameId: string | null;
  kind: string;
  data: Record<string, unknown>;
  lon: number | null;
  lat: number | null;
  /** What the frame carried beyond telemetry (vin, dtcs, battery, collision, gps extras); null when nothing. */
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

/** A dead letter must always be storable: PostgreSQL text cannot hold U+0000. */
const noNul = (s: string) => s.replace(/\u0000/g, '\uFFFD');

export interface Association { deviceId: string; vehicleId: string; startedAt: Date }

// The whole batch travels as one JSON parameter: one statement per batch on both drivers, whatever its
// size (PGlite takes one statement per call, and knex would otherwise bind 10 parameters per row).
const INSERT_MESSAGES = `
  INSERT INTO messages (id, device_id, ts, frame_id, kind, data, location, extra, received_at)
  SELECT r.id, r.device_id, r.ts, r.frame_id, r.kind, r.data,
    CASE WHEN r.lon IS NULL OR r.lat IS NULL THEN NULL ELSE ST_SetSRID(ST_MakePoint(r.lon, r.lat), 4326) END,
    r.extra, r.received_at
  FROM json_to_recordset(?::json) AS r(id uuid, device_id uuid, ts timestamptz, frame_id text, kind text,
    data jsonb, lon float8, lat float8, extra jsonb, received_at timestamptz)
  ON CONFLICT (device_id, frame_id) WHERE frame_id IS NOT NULL DO NOTHING
  RETURNING id`;

const INSERT_DEAD_LETTERS = `
  INSERT INTO dead_letters (device_id, topic, frame_index, reason, raw, received_at)
  SELECT r.device_id, r.topic, r.frame_index, r.reason, decode(r.raw, 'base64'), r.received_at
  FROM json_to_recordset(?::json) AS r(device_id text, topic text, frame_index integer, reason text, raw text,
    received_at timestamptz)`;

const LATEST_TS = `
  SELECT e.v::uuid AS device_id, (SELECT max(m.ts) FROM messages m WHERE m.device_id = e.v::uuid) AS latest
  FROM json_array_elements_text(?::json) AS e(v)`;

// For each device: the association in force at the batch's oldest message, and any that start within the batch.
const ASSOCIATIONS = `
  SELECT b.device_id, a.vehicle_id, a.started_at
  FROM json_to_recordset(?::json) AS b(device_id uuid, min_ts timestamptz, max_ts timestamptz)
  JOIN LATERAL (
    (SELECT vehicle_id, started_at, created_at FROM device_vehicles
      WHERE device_id = b.device_id AND started_at <= b.min_ts ORDER BY started_at DESC, created_at DESC LIMIT 1)
    UNION ALL
    (SELECT vehicle_id, started_at, created_at FROM device_vehicles
      WHERE device_id = b.device_id AND started_at > b.min_ts AND started_at <= b.max_ts)
  ) AS a ON true
  ORDER BY b.device_id, a.started_at, a.created_at`;

/** SQL of the ingest pipeline (gateway/): batched inserts of messages and dead letters, vehicle associations. */
export function ingestRepository(knex: Knex) {
  return {
    /** Inserts the batch in one statement; frames already stored (same device and frame id) are skipped. Returns the ids inserted. */
    async insertMessages(rows: MessageRow[], trx: Knex = knex): Promise<Set<string>> {
      if (!rows.length) return new Set();
      const json = rows.map((r) => ({
        id: r.id, device_id: r.deviceId, ts: r.timestamp.toISOString(), frame_id: r.frameId, kind: r.kind, data: r.data,
        lon: r.lon, lat: r.lat, extra: r.extra, received_at: r.receivedAt.toISOString(),
      }));
      const result = await trx.raw(INSERT_MESSAGES, [JSON.stringify(json)]);
      return new Set((result.rows as { id: string }[]).map((r) => r.id));
    },

    async insertDeadLetters(rows: DeadLetterRow[], trx: Knex = knex): Promise<void> {
      if (!rows.length) return;
      const json = rows.map((r) => ({
        device_id: r.deviceId && noNul(r.deviceId), topic: noNul(r.topic), frame_index: r.frameIndex, reason: noNul(r.reason),
        raw: r.raw ? r.raw.toString('base64') : null, received_at: r.receivedAt.toISOString(),
      }));
      await trx.raw(INSERT_DEAD_LETTERS, [JSON.stringify(json)]);
    },

    /** The newest stored message timestamp of each device (absent when it has none). */
    async latestTimestamps(deviceIds: string[], trx: Knex = knex): Promise<Map<string, Date>> {
      if (!deviceIds.length) return new Map();
      const result = await trx.raw(LATEST_TS, [JSON.stringify(deviceIds)]);
      const rows = result.rows as { device_id: string; latest: Date | null }[];
      return new Map(rows.filter((r) => r.latest).map((r) => [r.device_id, new Date(r.latest!)]));
    },

    /** Associations of each device that apply to messages between min and max (inclusive), oldest first. */
    async associationsDuring(spans: { deviceId: string; min: Date; max: Date }[], trx: Knex = knex): Promise<Association[]> {
      if (!spans.length) return [];
      const json = spans.map((s) => ({ device_id: s.deviceId, min_ts: s.min.toISOString(), max_ts: s.max.toISOString() }));
      const result = await trx.raw(ASSOCIATIONS, [JSON.stringify(json)]);
      return (result.rows as Record<string, any>[]).map((r) => ({
        deviceId: r.device_id, vehicleId: r.vehicle_id, startedAt: new Date(r.started_at),
      }));
    },

    /**
     * Records that the device was in the vehicle from `at` on (spec 4.2: a new association when the VIN
     * changes). A late frame lands where it belongs: when the vehicle is already the one in force at `at`
     * nothing changes; when the next association is the same vehicle, it is moved back to `at` instead of
     * being repeated. Returns true when the device's history changed.
     */
    async associateAt(deviceId: string, vehicleId: string, at: Date, trx: Knex = knex): Promise<boolean> {
      const order = [{ column: 'started_at', order: 'desc' as const }, { column: 'created_at', order: 'desc' as const }];
      const current = await trx('device_vehicles').select('vehicle_id').where('device_id', deviceId)
        .where('started_at', '<=', at).orderBy(order).first();
      if (current?.vehicle_id === vehicleId) return false;
      const next = await trx('device_vehicles').select('id', 'vehicle_id').where('device_id', deviceId)
        .where('started_at', '>', at).orderBy([{ column: 'started_at', order: 'asc' }, { column: 'created_at', order: 'asc' }]).first();
      if (next?.vehicle_id === vehicleId) {
        await trx('device_vehicles').where('id', next.id).update({ started_at: at });
        return true;
      }
      await trx('device_vehicles').insert({ id: randomUUID(), device_id: deviceId, vehicle_id: vehicleId, started_at: at, created_at: new Date() });
      return true;
    },

    /** Dead letters of a device, newest first (operators and tests read them; no API serves them yet). */
    async deadLetters(deviceId: string, limit = 100, trx: Knex = knex): Promise<(DeadLetterRow & { id: number })[]> {
      const rows = await trx('dead_letters').select('id', 'device_id', 'topic', 'frame_index', 'reason', 'raw', 'received_at')
        .where('device_id', deviceId).orderBy('id', 'desc').limit(limit);
      return rows.map((r: Record<string, any>) => ({
        id: Number(r.id), deviceId: r.device_id, topic: r.topic, frameIndex: r.frame_index, reason: r.reason,
        raw: r.raw ? Buffer.from(r.raw) : null, receivedAt: r.received_at,
      }));
    },
  };
}
export type IngestRepository = ReturnType<typeof ingestRepository>;
