// Stored telemetry made in SQL, for benchmarks that need a long history (export, and any other that reads one): one
// INSERT … SELECT over generate_series, so a million messages take a minute, not the hours ingest would.
import type { Knex } from 'knex';
import { createPartitions, listPartitions } from '../db/partitions.js';
import { MESSAGE_PARTITIONS } from '../db/retention/time-tables.js';

export interface GenerateOptions {
  /** Devices (already provisioned) that get the messages, each the same number. */
  devices: string[];
  /** Messages per device. */
  messages: number;
  /** Days the messages span, evenly, from `start`. */
  days: number;
  start: Date;
}

/**
 * Stores `messages` messages per device, spread evenly over `days` days from `start`, through the columns the ingest
 * insert writes (db/repositories/ingest.repository.ts INSERT_AFTER_LATEST), in one statement: a drive round a 5 km
 * circle near Dallas, a location on every message (the point and `data.location`, as the gateway stores both), speed,
 * rpm, load and coolant on every message, the fuel type on every 100th, an accelerometer window on every 10th. The
 * messages have no frame id (nothing for ingest to deduplicate against) and no distance step (the devices are in no
 * vehicle, so a step counts for none). device_message_counts follows through its statement-level trigger
 * (migration 013). Returns the messages stored.
 */
export async function generateMessages(knex: Knex, o: GenerateOptions): Promise<number> {
  const stepMs = (o.days * 86_400_000) / Math.max(1, o.messages);
  await createPartitions(knex, MESSAGE_PARTITIONS, o.start, new Date(o.start.getTime() + o.days * 86_400_000));
  const { rows } = await knex.raw(`
    WITH g AS (
      SELECT d.device_id, i,
        ?::timestamptz + make_interval(secs => round(i * ?::float8) / 1000) AS ts,
        -96.8 + 0.045 * cos(i / 600.0) AS lon, 32.78 + 0.045 * sin(i / 600.0) AS lat,
        round((50 + 40 * sin(i / 97.0))::numeric, 1)::float8 AS speed
      FROM unnest(?::uuid[]) AS d(device_id) CROSS JOIN generate_series(0, ?::int - 1) AS i),
    d AS (
      SELECT g.*, jsonb_build_object('vehicleSpeed', g.speed, 'rpm', round(800 + g.speed * 40),
          'calculatedLoadValue', round((20 + g.speed / 2)::numeric, 1), 'coolantTemp', 90)
        || CASE WHEN g.i % 100 = 0 THEN jsonb_build_object('fuelType', 'Gasoline') ELSE '{}'::jsonb END
        || CASE WHEN g.i % 10 = 0 THEN jsonb_build_object('accel', jsonb_build_object('maxX', 1.2, 'maxY', 0.8, 'maxZ', 9.9,
          'minX', -1.1, 'minY', -0.7, 'minZ', 9.7)) ELSE '{}'::jsonb END AS data
      FROM g),
    ins AS (
      -- stored as the ingest insert stores a frame (db/message-data.sql.ts): slots, other values, the point; an id
      -- carrying the timestamp
      INSERT INTO messages (id, device_id, ts, received_at, num, txt, location)
      SELECT message_uuid(d.ts), d.device_id, d.ts, d.ts, message_num(d.data, NULL), message_txt(d.data),
        ST_SetSRID(ST_MakePoint(d.lon, d.lat), 4326)
      FROM d
      RETURNING 1)
    SELECT count(*) AS n FROM ins`, [o.start, stepMs, o.devices, o.messages]);
  // the partitions the history filled, not the empty ones ahead: an analyzed empty partition looks free to read whole
  // (db/connection.ts autoAnalyze leaves them too)
  const end = o.start.getTime() + o.days * 86_400_000;
  for (const p of await listPartitions(knex, MESSAGE_PARTITIONS)) {
    if (p.to.getTime() > o.start.getTime() && p.from.getTime() <= end) await knex.raw(`ANALYZE ${p.name}`);
  }
  return Number(rows[0].n);
}
