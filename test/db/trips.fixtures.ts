import type { Knex } from 'knex';
import type { TestApp } from '../helpers/app.js';
import { tripsStage } from '../../gateway/stages/trips.stage.js';
import type { NewEvent } from '../../db/repositories/events.repository.js';
import { messageRow } from '../helpers/telemetry.factory.js';
import { uuid7 } from '../../lib/uuid7.js';
import type { TripStats } from '../../db/trips/formulas.js';
import { partitionsFor } from '../helpers/partitions.js';

/** A frame as stored: seconds from BASE, kind, speed (km/h), position, other telemetry. */
export interface F {
  s: number; kind?: 'startup' | 'telemetry' | 'shutdown'; speed?: number; lat?: number; lon?: number; data?: Record<string, unknown>;
}

export const BASE = Date.UTC(2026, 0, 15, 8, 0, 0);
export const at = (s: number) => new Date(BASE + s * 1000);
export const LAT = 32.78;
export const LON = -96.8;
/** Degrees of latitude for m meters (WGS 84 mean near 33° N: 110.9 km per degree). */
export const north = (m: number) => LAT + m / 110_900;

/**
 * A drive north: a startup at s0, samples every `every` s at `kmh` (accelerating from 0 over the first
 * sample), a shutdown after `seconds`. Positions follow the speed so GPS and VSS distances agree.
 */
export function drive(s0: number, seconds: number, kmh: number, o: { every?: number; ignition?: boolean; fromM?: number } = {}): F[] {
  const every = o.every ?? 5;
  const frames: F[] = [];
  let m = o.fromM ?? 0;
  for (let s = 0; s <= seconds; s += every) {
    const first = s === 0;
    const last = s + every > seconds;
    const speed = first || last ? 0 : kmh;
    if (!first) m += ((frames.at(-1)!.speed! + speed) / 2 / 3.6) * every;
    const kind = o.ignition === false ? 'telemetry' : first ? 'startup' : last ? 'shutdown' : 'telemetry';
    frames.push({ s: s0 + s, kind, speed, lat: north(m), lon: LON });
  }
  return frames;
}

/** Stores frames as the gateway does and returns them as the pipeline hands them to stages. */
async function store(trx: Knex, deviceId: string, frames: F[]) {
  const rows = frames.map((f) => {
    const data: Record<string, unknown> = { ...(f.speed !== undefined ? { vehicleSpeed: f.speed } : {}), ...(f.data ?? {}) };
    if (f.lat !== undefined) data.location = { type: 'Point', coordinates: [f.lon ?? LON, f.lat] };
    return { id: uuid7(at(f.s).getTime()), ts: at(f.s), kind: f.kind ?? 'telemetry', data, f };
  });
  if (rows.length) {
    await partitionsFor(trx, 'messages', Math.min(...rows.map((r) => r.ts.getTime())), Math.max(...rows.map((r) => r.ts.getTime())));
    await trx('messages').insert(rows.map((r) => messageRow(trx, { id: r.id, deviceId, ts: r.ts, kind: r.kind, data: r.data })));
  }
  return rows.sort((a, b) => a.ts.getTime() - b.ts.getTime());
}

/** The rows of messages this transaction has read so far (sequential scans and index fetches: pg_stat_xact_user_tables). */
async function messageRowsRead(trx: Knex): Promise<number> {
  const { rows } = await trx.raw(`SELECT coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0) AS n FROM pg_stat_xact_user_tables
    WHERE relname = 'messages'`);
  return Number(rows[0]?.n ?? 0);
}

/**
 * One ingest batch for several devices: stores their frames and runs the trips stage in one transaction. With
 * `reads`, its `messages` is set to the rows of messages the trips stage read.
 */
export async function batch(t: TestApp, byDevice: Record<string, F[]>, onQuery?: () => void, reads?: { messages?: number }): Promise<NewEvent[]> {
  return t.db.knex.transaction(async (trx) => {
    const devices = [];
    for (const [deviceId, frames] of Object.entries(byDevice)) {
      const [{ latest }] = await trx('messages').where({ device_id: deviceId }).max('ts as latest');
      const rows = await store(trx, deviceId, frames);
      devices.push({
        deviceId, previousLatest: latest ? new Date(latest) : null,
        messages: rows.map((r) => ({ id: r.id, deviceId, timestamp: r.ts, kind: r.kind, data: r.data })) as any[],
      });
    }
    if (onQuery) t.db.knex.on('query', onQuery);
    let events: NewEvent[];
    const before = reads ? await messageRowsRead(trx) : 0;
    try {
      events = await tripsStage({ config: t.config } as any).apply({ trx, devices });
      if (reads) reads.messages = (await messageRowsRead(trx)) - before;
    } finally {
      if (onQuery) t.db.knex.off('query', onQuery);
    }
    await t.repos.events.insert(events, trx);
    return events;
  });
}

/** Feeds frames in batches of `size` (in order). */
export async function feed(t: TestApp, deviceId: string, frames: F[], size = 10): Promise<void> {
  for (let i = 0; i < frames.length; i += size) await batch(t, { [deviceId]: frames.slice(i, i + size) });
}

export async function tripsOf(t: TestApp, deviceId: string) {
  return t.db.knex('trips').where({ device_id: deviceId }).orderBy('start_ts');
}

export async function tripEvents(t: TestApp, deviceId: string) {
  const rows = await t.db.knex('events').where({ device_id: deviceId }).whereLike('event_type', 'trip-%').orderBy([{ column: 'ts' }, { column: 'event_type' }]);
  return rows.map((r: any) => `${r.event_type}@${(new Date(r.ts).getTime() - BASE) / 1000}`);
}

/**
 * A long drive stored in bulk (one INSERT … SELECT, as a device that drove for hours), then its trips derived as one
 * in-order batch: a startup at s0, a sample every second at `kmh` northwards with its position, a shutdown at
 * s0 + n - 1 (with `ignition` false: telemetry only, a motion trip). Returns the frames as `F`, in time order.
 */
export async function longDrive(t: TestApp, deviceId: string, s0: number, n: number, kmh = 50, { ignition = true } = {}): Promise<F[]> {
  const frames: F[] = [];
  for (let i = 0; i < n; i++) {
    const kind = !ignition ? 'telemetry' : i === 0 ? 'startup' : i === n - 1 ? 'shutdown' : 'telemetry';
    const speed = i === 0 || i === n - 1 ? 0 : kmh;
    frames.push({ s: s0 + i, kind, speed, lat: north(i * kmh / 3.6), lon: LON });
  }
  await partitionsFor(t.db.knex, 'messages', at(s0), at(s0 + n));
  await t.db.knex.transaction(async (trx) => {
    await trx.raw(`
      INSERT INTO messages (id, device_id, ts, kind, num, location, received_at)
      SELECT gen_random_uuid(), ?::uuid, to_timestamp(f.ts_ms / 1000.0), nullif(f.kind, 'telemetry'),
        message_num(jsonb_build_object('vehicleSpeed', f.speed), NULL), ST_SetSRID(ST_MakePoint(f.lon, f.lat), 4326), now()
      FROM unnest(?::float8[], ?::text[], ?::float8[], ?::float8[], ?::float8[]) AS f(ts_ms, kind, speed, lat, lon)`,
    [deviceId, frames.map((f) => at(f.s).getTime()), frames.map((f) => f.kind), frames.map((f) => f.speed), frames.map((f) => f.lat),
      frames.map((f) => f.lon)] as any);
    // as the platform's auto-analyze does once a table has grown (db/connection.ts): the plans then know a device's rows
    await trx.raw('ANALYZE messages');
    const rows = await trx('messages').where({ device_id: deviceId }).orderBy([{ column: 'ts' }, { column: 'received_at' }, { column: 'id' }])
      .select('id', 'ts', trx.raw(`coalesce(kind, 'telemetry') AS kind`), trx.raw('message_data(num, txt, location) AS data'));
    const devices = [{ deviceId, previousLatest: null,
      messages: rows.map((r: any) => ({ id: r.id, deviceId, timestamp: new Date(r.ts), kind: r.kind, data: r.data })) as any[] }];
    await t.repos.events.insert(await tripsStage({ config: t.config } as any).apply({ trx, devices }), trx);
  });
  return frames;
}

/** An application with one device on a vehicle of its own (a random VIN), associated a minute before BASE. */
export async function deviceOnVehicle(t: TestApp) {
  const app = await t.make.application();
  const device = await t.make.device(app.principal);
  const vehicle = await t.repos.vehicles.upsertByVin(`1HGCM82633A${String(Math.floor(Math.random() * 1e6)).padStart(6, '0')}`, async () => ({}));
  await t.repos.vehicles.associate(device.id, vehicle.id, at(-60));
  return { app, device, vehicle };
}

/** A device of a new application. */
export const newDevice = async (a: TestApp) => { const app = await a.make.application(); return (await a.make.device(app.principal)).id; };

/** Every statistic, numbers to 6 significant digits (sums added in another order differ in their last bits). */
export const rounded = (s: TripStats) => Object.fromEntries(Object.entries(s).map(([k, v]) => [k, typeof v === 'number' ? Number(v.toPrecision(6)) : v]));
