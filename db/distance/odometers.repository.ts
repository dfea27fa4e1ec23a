// Odometer readings and triggers, per application and vehicle. Distances in meters.
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { streamPage, type StreamWindow } from '../paging.js';
import { travelled } from './estimate.sql.js';

export type TriggerType = 'specific' | 'from_now' | 'milestone';
export const TRIGGER_TYPES: TriggerType[] = ['specific', 'from_now', 'milestone'];

export interface Odometer { id: string; vehicleId: string; applicationId: string; readingM: number; date: Date }
export interface OdometerTrigger {
  id: string; vehicleId: string; applicationId: string; type: TriggerType; thresholdM: number; events: number; createdAt: Date;
}

type NumColumn = number | string;
interface OdometerRow { id: string; vehicle_id: string; application_id: string; reading_m: NumColumn; date: Date | string }
interface TriggerRow {
  id: string; vehicle_id: string; application_id: string; type: TriggerType; threshold_m: NumColumn; events: NumColumn; created_at: Date | string;
}

const toOdometer = (r: OdometerRow): Odometer => ({
  id: r.id, vehicleId: r.vehicle_id, applicationId: r.application_id, readingM: Number(r.reading_m), date: new Date(r.date),
});
const toTrigger = (r: TriggerRow): OdometerTrigger => ({
  id: r.id, vehicleId: r.vehicle_id, applicationId: r.application_id, type: r.type, thresholdM: Number(r.threshold_m),
  events: Number(r.events), createdAt: new Date(r.created_at),
});
const ODO = ['id', 'vehicle_id', 'application_id', 'reading_m', 'date'];
const TRG = ['id', 'vehicle_id', 'application_id', 'type', 'threshold_m', 'events', 'created_at'];

/**
 * Where a new trigger fires first (db/distance/triggers.sql.ts): `specific` at its threshold (odometer estimate),
 * `from_now` at the vehicle's travelled total now + threshold, `milestone` at the first multiple above the estimate now.
 */
export function firstTarget(type: TriggerType, thresholdM: number, now: { travelledM: number; estimateM: number }): number {
  if (type === 'specific') return thresholdM;
  if (type === 'from_now') return now.travelledM + thresholdM;
  return (Math.floor(now.estimateM / thresholdM) + 1) * thresholdM;
}

/**
 * Paging, lookup and deletion of an application's records in `table` (readings and triggers alike): scoped to
 * the application, paged newest `tsColumn` first.
 */
function appRecords<R, T>(knex: Knex, table: string, columns: string[], map: (r: R) => T, tsColumn: string) {
  return {
    async list(appId: string, vehicleId: string, w: StreamWindow, trx: Knex = knex) {
      const p = await streamPage<R>(
        () => trx(table).select(columns).where({ application_id: appId, vehicle_id: vehicleId }), tsColumn, w);
      return { remaining: p.remaining, prior: p.prior, newest: p.newest, rows: p.rows.map(map) };
    },
    async get(appId: string, id: string, trx: Knex = knex): Promise<T | undefined> {
      const row = await trx(table).select(columns).where({ id, application_id: appId }).first();
      return row && map(row);
    },
    async delete(appId: string, id: string, trx: Knex = knex): Promise<boolean> {
      return (await trx(table).where({ id, application_id: appId }).delete()) > 0;
    },
  };
}

export function odometersRepository(knex: Knex) {
  const odometers = appRecords(knex, 'odometers', ODO, toOdometer, 'date');
  const triggers = appRecords(knex, 'odometer_triggers', TRG, toTrigger, 'created_at');
  return {
    /** Stores a reading with the vehicle's travelled total at its date (the anchor of later estimates). */
    async createOdometer(appId: string, vehicleId: string, readingM: number, date: Date, trx: Knex = knex): Promise<Odometer> {
      const at = await travelled(trx, vehicleId, date);
      const row = {
        id: randomUUID(), vehicle_id: vehicleId, application_id: appId, reading_m: readingM, date,
        travelled_m: at.totalM, gps_m: at.gpsM, vss_m: at.vssM, created_at: new Date(),
      };
      await trx('odometers').insert(row);
      return toOdometer(row);
    },
    /**
     * A stored reading of the application's for the vehicle that `readingM` at `date` would contradict, if any: one
     * dated before it with a larger value, or after it with a smaller one (the most contradicting: the largest earlier
     * value, else the smallest later one).
     */
    async conflictingReading(appId: string, vehicleId: string, readingM: number, date: Date, trx: Knex = knex): Promise<Odometer | undefined> {
      const scope = () => trx('odometers').select(ODO).where({ application_id: appId, vehicle_id: vehicleId });
      const earlier = await scope().where('date', '<', date).where('reading_m', '>', readingM).orderBy('reading_m', 'desc').first();
      if (earlier) return toOdometer(earlier);
      const later = await scope().where('date', '>', date).where('reading_m', '<', readingM).orderBy('reading_m', 'asc').first();
      return later && toOdometer(later);
    },
    listOdometers: odometers.list,
    getOdometer: odometers.get,
    deleteOdometer: odometers.delete,

    async createTrigger(appId: string, vehicleId: string, type: TriggerType, thresholdM: number,
      now: { travelledM: number; estimateM: number }, trx: Knex = knex): Promise<OdometerTrigger> {
      const row = {
        id: randomUUID(), vehicle_id: vehicleId, application_id: appId, type, threshold_m: thresholdM, events: 0,
        next_m: firstTarget(type, thresholdM, now), done: false, created_at: new Date(),
      };
      await trx('odometer_triggers').insert(row);
      return toTrigger(row);
    },
    listTriggers: triggers.list,
    getTrigger: triggers.get,
    deleteTrigger: triggers.delete,
  };
}
export type OdometersRepository = ReturnType<typeof odometersRepository>;
