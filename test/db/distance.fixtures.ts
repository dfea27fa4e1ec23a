import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { TestApp } from '../helpers/app.js';
import { silentLogger } from '../../lib/logger.js';
import { distanceStage } from '../../gateway/stages/distance.stage.js';
import type { DeviceBatch, IngestedMessage } from '../../gateway/ingest.types.js';
import { storedDeviceBatches } from '../../gateway/ingest.batch.js';
import type { NewEvent } from '../../db/repositories/events.repository.js';
import type { MessageRow } from '../../db/repositories/ingest.repository.js';
import { frameUuid, uuid7 } from '../../lib/uuid7.js';

export const LAT = 32.7767;
export const LON = -96.797;
/** Meters → degrees of latitude; the tests compare against ST_Distance on the spheroid with 1% margins. */
export const north = (m: number) => LAT + m / 110_880;

/** A frame `s` seconds after t0, `north`/`east` meters from the origin; `id`: its frame id (none when absent). */
export interface Frame { s: number; north?: number; east?: number; speed?: number; id?: string }

let vins = 0;
/** A device in a vehicle since an hour before `t0`, readable by a fresh application. */
export async function vehicleWithDevice(t: TestApp, t0: number) {
  const app = await t.make.application();
  const device = await t.make.device(app.principal);
  const vin = `VVDIST${String(++vins).padStart(4, '0')}${randomUUID().replace(/\D/g, '').slice(0, 7).padEnd(7, '7')}`;
  const vehicle = await t.repos.vehicles.upsertByVin(vin, async () => ({}));
  await t.repos.ingest.associateAt(device.id, vehicle.id, new Date(t0 - 3_600_000));
  return { app, device, vehicle };
}

/** The frames as the gateway's messages of the device (not stored). */
export function framesToMessages(deviceId: string, vehicleId: string | null, t0: number, frames: Frame[]): IngestedMessage[] {
  return frames.map((f) => {
    const located = f.north !== undefined;
    const lat = located ? north(f.north!) : null;
    const lon = located ? LON + (f.east ?? 0) / (110_880 * Math.cos((LAT * Math.PI) / 180)) : null;
    const ms = t0 + f.s * 1000;
    return {
      id: f.id ? frameUuid(ms, deviceId, f.id) : uuid7(ms), deviceId, timestamp: new Date(ms), kind: 'telemetry', frameId: f.id ?? null,
      data: {
        ...(located ? { location: { type: 'Point', coordinates: [lon, lat] } } : {}),
        ...(f.speed !== undefined ? { vehicleSpeed: f.speed } : {}),
      },
      lat, lon, gps: null, vin: null, dtcs: null, battery: null, collision: null, receivedAt: new Date(), vehicleId,
    };
  });
}

/** The messages as the insert's rows. */
export const rowsOf = (messages: IngestedMessage[]): MessageRow[] => messages.map((m) => ({
  id: m.id, deviceId: m.deviceId, timestamp: m.timestamp, kind: m.kind, data: m.data, lon: m.lon, lat: m.lat,
  extra: null, receivedAt: m.receivedAt,
}));

/** Stores the frames as the gateway does and returns the device's batch as the pipeline hands it to the stages. */
export async function storeFrames(trx: Knex, t: TestApp, deviceId: string, vehicleId: string, t0: number, frames: Frame[]): Promise<DeviceBatch> {
  const messages = framesToMessages(deviceId, vehicleId, t0, frames);
  // with the steps and the device's newest timestamp before these, as the pipeline's insert returns them
  const { inserted, latest } = await t.repos.ingest.insertMessages(rowsOf(messages), trx);
  const [batch] = storedDeviceBatches(messages, inserted, latest);
  return batch ?? { deviceId, messages: [], previousLatest: latest.get(deviceId) ?? null };
}

/** The same frames stored for each vehicle, one after another: a transaction's queries run one at a time. */
export async function storeFleet(trx: Knex, t: TestApp, fleet: { device: { id: string }; vehicle: { id: string } }[], t0: number, frames: Frame[]) {
  const batches: DeviceBatch[] = [];
  for (const d of fleet) batches.push(await storeFrames(trx, t, d.device.id, d.vehicle.id, t0, frames));
  return batches;
}

/** One batch through the distance stage (stored events too, as the pipeline does); counts the stage's statements. */
export async function runStage(t: TestApp, batches: (trx: Knex) => Promise<DeviceBatch[]>) {
  const stage = distanceStage({ config: t.config, knex: t.db.knex, repos: t.repos, log: silentLogger });
  let statements = 0;
  const count = () => { statements++; };
  const events = await t.db.knex.transaction(async (trx) => {
    const devices = await batches(trx);
    t.db.knex.on('query', count);
    let out: NewEvent[];
    try { out = await stage.apply({ trx, devices }); } finally { t.db.knex.off('query', count); }
    await t.repos.events.insert(out, trx);
    return out;
  });
  return { events, statements };
}

export async function vehicleTotal(t: TestApp, vehicleId: string) {
  const row = await t.db.knex('vehicle_distances').where({ vehicle_id: vehicleId }).first();
  return row ? { total: Number(row.travelled_m), gps: Number(row.gps_m), vss: Number(row.vss_m) } : { total: 0, gps: 0, vss: 0 };
}
