import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';

export interface MessageInput {
  deviceId: string;
  ts: Date | string;
  /** Catalog parameters (and `accel`) of the message. */
  data?: Record<string, unknown>;
  /** [lon, lat]: stored as the PostGIS point and as GeoJSON `data.location`, as the gateway stores it. */
  location?: [number, number];
  id?: string;
}

export interface InsertedMessage { id: string; deviceId: string; ts: Date; data: Record<string, unknown> }

/** Inserts messages the way the ingest pipeline stores them (one multi-row insert), without the gateway. */
export async function insertMessages(knex: Knex, inputs: MessageInput[]): Promise<InsertedMessage[]> {
  const out = inputs.map((m) => {
    const data = { ...(m.data ?? {}) };
    if (m.location) data.location = { type: 'Point', coordinates: m.location };
    return { id: m.id ?? randomUUID(), deviceId: m.deviceId, ts: new Date(m.ts), data, location: m.location };
  });
  if (!out.length) return [];
  const rows = out.map((m) => ({
    id: m.id, device_id: m.deviceId, ts: m.ts, kind: 'telemetry', data: JSON.stringify(m.data), extra: null,
    received_at: new Date(),
    location: m.location ? knex.raw('ST_SetSRID(ST_MakePoint(?, ?), 4326)', m.location) : null,
  }));
  await knex('messages').insert(rows);
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
