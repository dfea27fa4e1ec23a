import type { Knex } from 'knex';
import { streamPage, type StreamWindow } from '../paging.js';
import { readableDeviceIds, type Principal } from '../repositories/scope.js';
import { previewOf } from './finalize.sql.js';
import { PREVIEW_TOLERANCE_DEG, tripStats, type Grade, type TripStats } from './formulas.js';
import { sumsOf, type TripSumsRow } from './segment.js';

export interface Trip {
  id: string; deviceId: string; vehicleId: string | null; start: Date; stop: Date | null; lastTs: Date;
  startReason: string; endReason: string | null;
  /** [lon, lat] degrees or null. */
  startPoint: [number, number] | null; stopPoint: [number, number] | null;
  preview: string | null; stats: TripStats;
}

export interface ReportCard { id: string; tripId: string; deviceId: string; vehicleId: string | null; ts: Date; grade: Grade; score: number | null }

interface GradeCountRow { grade: Grade; lifetime: number | string; in_window: number | string }

const point = (x: unknown, y: unknown): [number, number] | null => (x === null || x === undefined ? null : [Number(x), Number(y)]);

/** A trips row (`t.*`) with its points' coordinates and its preview (the open trip's drawn so far). */
type TripRow = TripSumsRow & {
  id: string; device_id: string; vehicle_id: string | null; start_reason: string; end_reason: string | null;
  start_x: number | null; start_y: number | null; stop_x: number | null; stop_y: number | null; preview_text: string | null;
};

export function toTrip(r: TripRow): Trip {
  return {
    id: r.id, deviceId: r.device_id, vehicleId: r.vehicle_id, start: new Date(r.start_ts),
    stop: r.stop_ts ? new Date(r.stop_ts) : null, lastTs: new Date(r.last_ts), startReason: r.start_reason, endReason: r.end_reason,
    startPoint: point(r.start_x, r.start_y), stopPoint: point(r.stop_x, r.stop_y), preview: r.preview_text ?? null,
    stats: tripStats(sumsOf(r)),
  };
}

interface ReportCardRow {
  id: string; trip_id: string; device_id: string; vehicle_id: string | null; ts: Date | string; grade: Grade; score: number | string | null;
}
const toCard = (r: ReportCardRow): ReportCard => ({
  id: r.id, tripId: r.trip_id, deviceId: r.device_id, vehicleId: r.vehicle_id, ts: new Date(r.ts), grade: r.grade,
  score: r.score === null ? null : Number(r.score),
});

/**
 * Reading trips and report cards, limited to the devices the application can read. An open
 * trip's preview is drawn from its messages so far (a closed trip keeps the one made when it closed).
 */
export function tripsRepository(knex: Knex) {
  const trips = (trx: Knex, app: Principal) => trx('trips as t').select('t.*',
    trx.raw('ST_X(t.start_point) AS start_x, ST_Y(t.start_point) AS start_y, ST_X(t.stop_point) AS stop_x, ST_Y(t.stop_point) AS stop_y'),
    trx.raw(`CASE WHEN t.stop_ts IS NULL THEN ${previewOf('t', 't.last_ts')} ELSE t.preview END AS preview_text`, [PREVIEW_TOLERANCE_DEG]))
    .whereIn('t.device_id', readableDeviceIds(trx, app));
  const tripPage = async (base: () => Knex.QueryBuilder, w: StreamWindow) => {
    const p = await streamPage<TripRow>(base, 't.start_ts', w, 't.id');
    return { remaining: p.remaining, prior: p.prior, newest: p.newest, trips: p.rows.map(toTrip) };
  };
  const cards = (trx: Knex, app: Principal) => trx('report_cards as c').select('c.*').whereIn('c.device_id', readableDeviceIds(trx, app));
  const cardPage = async (base: () => Knex.QueryBuilder, w: StreamWindow) => {
    const p = await streamPage<ReportCardRow>(base, 'c.ts', w, 'c.id');
    return { remaining: p.remaining, prior: p.prior, newest: p.newest, reportCards: p.rows.map(toCard) };
  };
  return {
    listForDevice: (app: Principal, deviceId: string, w: StreamWindow, trx: Knex = knex) =>
      tripPage(() => trips(trx, app).where('t.device_id', deviceId), w),
    /** Trips of the given devices (the vehicle's readable recent devices) while they were in the vehicle. */
    listForVehicle: (app: Principal, vehicleId: string, deviceIds: string[], w: StreamWindow, trx: Knex = knex) =>
      tripPage(() => trips(trx, app).where('t.vehicle_id', vehicleId).whereIn('t.device_id', deviceIds), w),
    async get(app: Principal, id: string, trx: Knex = knex): Promise<Trip | undefined> {
      const row = await trips(trx, app).where('t.id', id).first();
      return row && toTrip(row);
    },
    cardsForDevice: (app: Principal, deviceId: string, w: StreamWindow, trx: Knex = knex) =>
      cardPage(() => cards(trx, app).where('c.device_id', deviceId), w),
    cardsForVehicle: (app: Principal, vehicleId: string, deviceIds: string[], w: StreamWindow, trx: Knex = knex) =>
      cardPage(() => cards(trx, app).where('c.vehicle_id', vehicleId).whereIn('c.device_id', deviceIds), w),
    async card(app: Principal, id: string, trx: Knex = knex): Promise<ReportCard | undefined> {
      const row = await cards(trx, app).where('c.id', id).first();
      return row && toCard(row);
    },
    async cardOfTrip(app: Principal, tripId: string, trx: Knex = knex): Promise<ReportCard | undefined> {
      const row = await cards(trx, app).where('c.trip_id', tripId).first();
      return row && toCard(row);
    },
    /** Count per grade of a device's report cards: lifetime, and in the window (since exclusive, until inclusive). */
    async gradeCounts(app: Principal, deviceId: string, w: { since?: Date; until: Date }, trx: Knex = knex) {
      const rows = await cards(trx, app).clearSelect().where('c.device_id', deviceId).groupBy('c.grade')
        .select('c.grade', trx.raw('count(*) AS lifetime'),
          trx.raw('count(*) FILTER (WHERE c.ts <= ? AND (?::timestamptz IS NULL OR c.ts > ?::timestamptz)) AS in_window',
            [w.until, w.since ?? null, w.since ?? null]));
      const count = (key: 'lifetime' | 'in_window') => Object.fromEntries(rows.map((r: GradeCountRow) => [r.grade, Number(r[key])])) as Partial<Record<Grade, number>>;
      return { lifetime: count('lifetime'), inWindow: count('in_window') };
    },
  };
}
export type TripsRepository = ReturnType<typeof tripsRepository>;
