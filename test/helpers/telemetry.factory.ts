import type { Knex } from 'knex';
import { ensurePartitions } from '../../db/partitions.js';
import { MESSAGE_PARTITIONS } from '../../db/retention/time-tables.js';
import { storedData } from '../../db/message-data.sql.js';
import { uuid7 } from '../../lib/uuid7.js';

export interface MessageInput {
  deviceId: string;
  ts: Date | string;
  /** Catalog parameters (and `accel`) of the message. */
  data?: Record<string, unknown>;
  /** [lon, lat]: stored as the PostGIS point, read back as GeoJSON `data.location`. */
  location?: [number, number];
  id?: string;
}

export interface InsertedMessage { id: string; deviceId: string; ts: Date; data: Record<string, unknown> }

/** A float8[] literal of stored slots (null: no slots). */
const numLiteral = (num: (number | null)[] | null) => (num ? `{${num.map((v) => (v === null ? 'NULL' : String(v))).join(',')}}` : null);

/** A row of `messages` as the ingest pipeline stores one (db/message-data.sql.ts), for knex's insert. */
export interface StoredMessageInput {
  id?: string; deviceId: string; ts: Date; kind?: string; data?: Record<string, unknown>;
  gps?: Record<string, unknown> | null; extra?: Record<string, unknown> | null; receivedAt?: Date;
}
export function messageRow(knex: Knex, m: StoredMessageInput) {
  const data = m.data ?? {};
  const stored = storedData(data, m.gps);
  const coordinates = (data.location as { coordinates?: [number, number] } | undefined)?.coordinates;
  return {
    id: m.id ?? uuid7(m.ts.getTime()), device_id: m.deviceId, ts: m.ts, received_at: m.receivedAt ?? new Date(),
    kind: !m.kind || m.kind === 'telemetry' ? null : m.kind,
    num: numLiteral(stored.num), txt: stored.txt ? JSON.stringify(stored.txt) : null, extra: m.extra ? JSON.stringify(m.extra) : null,
    location: coordinates ? knex.raw('ST_SetSRID(ST_MakePoint(?, ?), 4326)', coordinates) : null,
  };
}

/** Inserts messages the way the ingest pipeline stores them (one multi-row insert), without the gateway. */
export async function insertMessages(knex: Knex, inputs: MessageInput[]): Promise<InsertedMessage[]> {
  const out = inputs.map((m) => {
    const data = { ...(m.data ?? {}) };
    if (m.location) data.location = { type: 'Point', coordinates: m.location };
    const ts = new Date(m.ts);
    return { id: m.id ?? uuid7(ts.getTime()), deviceId: m.deviceId, ts, data };
  });
  if (!out.length) return [];
  await ensurePartitions(knex, MESSAGE_PARTITIONS, out.map((m) => m.ts));
  await knex('messages').insert(out.map((m) => messageRow(knex, m)));
  return out.map(({ id, deviceId, ts, data }) => ({ id, deviceId, ts, data }));
}

export async function insertMessage(knex: Knex, input: MessageInput): Promise<InsertedMessage> {
  return (await insertMessages(knex, [input]))[0];
}

/** `n` messages one second apart, newest last, starting at `start`. */
export function series(deviceId: string, start: Date, n: number,
  make: (i: number) => Omit<MessageInput, 'deviceId' | 'ts'> = () => ({})): MessageInput[] {
  return Array.from({ length: n }, (_, i) => ({ deviceId, ts: new Date(start.getTime() + i * 1000), ...make(i) }));
}

/** `messages` as the API reads them back (kind, and data built from the stored columns), for tests' queries. */
export const storedMessages = (knex: Knex) => knex('messages')
  .select('id', 'device_id', 'ts', 'received_at', knex.raw(`coalesce(kind, 'telemetry') AS kind`),
    knex.raw('message_data(num, txt, location) AS data'), 'extra', 'step_m', 'step_source', 'step_vehicle_id');
