// Runs trip segmentation for a batch (or the silent-device sweep): a constant number of statements whatever
// the number of devices: continue (1, when a device's batch is in order without startup or shutdown; at ingest it
// shares its round trip with the distance statement), segment
// (1, for the devices the first did not advance), then, when trips closed, preview (1) and report cards (1),
// then, when a trip opened, closed or was re-derived, events (1). A batch with late frames adds the bound's plan (1)
// and, for frames past the bound that a splice applies to, the splice (1) and its report cards (1).
import type { Knex } from 'knex';
import type { NewEvent } from '../repositories/events.repository.js';
import { CONTINUE, LATE_PLAN, SEGMENT, SPLICE } from './segment.sql.js';
import { prepared } from '../prepared.js';
import { boolArray, timestampArray, uuidArray } from '../binary-array.js';
import type { PartRow, SqlPart } from '../fused.js';
import { EVENT_DIFF, FINALIZE, SWEEP, UPSERT_REPORT_CARDS } from './finalize.sql.js';
import {
  HARD, PREVIEW_TOLERANCE_DEG, REPORT_CARD, STOPPED_KMH, gradeFor, reportCardScore, tripStats, type Grade, type SegmentOptions, type TripSums,
} from './formulas.js';

/**
 * A device of the batch: its oldest new message, whether it arrived late (before the device's previous newest),
 * and the ids of its new messages (a new one at the millisecond of the newest stored one is still in order).
 */
export interface TripSpan {
  deviceId: string; firstTs: Date; late: boolean; messageIds: string[];
  /** The batch holds a startup or a sample that may be motion: without an open trip, only then can a trip begin. */
  mayOpen: boolean;
  /** The batch holds a startup or a shutdown (a trip boundary): CONTINUE does not apply. */
  ignition: boolean;
  /**
   * A late span's parts: its messages before the device's previous newest (`late`: ids, first and last time, whether
   * one is a startup or shutdown), its newest message's time, and the rest of it as an in-order span (null: none).
   */
  parts?: { lateIds: string[]; lateFirst: Date; lateLast: Date; lateIgnition: boolean; newest: Date; rest: TripSpan | null };
}

/**
 * How much a late frame may re-derive (lib/config.ts lateRecomputeMaxMessages, lateRecomputeMaxAgeMs). A late
 * frame re-derives its device's trips from the first one it can touch (SEGMENT) when that reads at most `maxMessages`
 * stored messages and starts no more than `maxAgeMs` before the device's newest message. Past the bound, a frame
 * inside a trip that it cannot split, join or end (no startup or shutdown, after the trip's start and before its last
 * counted message, a motion trip's last moving sample) is spliced into it (SPLICE: the trip's figures as a
 * re-derivation gives them, from a window of SPLICE_WINDOW messages each side; its map preview is not redrawn); any
 * other is stored, readable and counted by the other stages, but leaves the trips as they were. The batch's messages
 * after the device's previous newest advance its trips as in-order messages do.
 */
export interface RecomputeBounds { maxMessages: number; maxAgeMs: number }

/** Messages a splice reads on each side of a device's late messages (SPLICE's `n`). */
export const SPLICE_WINDOW = 50;

const ms = (v: Date | string | null) => (v === null ? 0 : new Date(v).getTime());

/** A running-sum column as SQL returns it: a number (or numeric text); absent or null counts as 0. */
type SumColumn = number | string | null | undefined;

/** The columns of a trips row that sumsOf reads (snake_case from SQL). */
export type TripSumsRow = {
  start_ts: Date | string; stop_ts?: Date | string | null; last_ts: Date | string; max_speed: number | string | null;
  message_count?: SumColumn; location_count?: SumColumn; gps_m?: SumColumn; vss_m?: SumColumn; speed_n?: SumColumn;
  moving_n?: SumColumn; moving_sum?: SumColumn; moving_sumsq?: SumColumn; load_n?: SumColumn; load_sum?: SumColumn;
  fuel_rate_l?: SumColumn; air_g?: SumColumn; fuel_n?: SumColumn; hard_accel?: SumColumn; hard_brake?: SumColumn;
  stop_count?: SumColumn; speeding_ms?: SumColumn; diesel?: boolean | null; last_stopped?: boolean | null;
};

/** A closed trip's row, as FINALIZE and SPLICE return it: what its report card is made from. */
type ClosedTripRow = TripSumsRow & { id: string; device_id: string; vehicle_id: string | null; stop_ts: Date | string };

/** The running sums of a trips row (snake_case from SQL). */
export function sumsOf(r: TripSumsRow): TripSums {
  const n = (v: unknown) => (v === null || v === undefined ? 0 : Number(v));
  return {
    startMs: ms(r.start_ts), endMs: ms(r.stop_ts ?? r.last_ts), messageCount: n(r.message_count), locationCount: n(r.location_count),
    gpsM: n(r.gps_m), vssM: n(r.vss_m), speedN: n(r.speed_n), maxSpeed: r.max_speed === null ? null : Number(r.max_speed),
    movingN: n(r.moving_n), movingSum: n(r.moving_sum), movingSumSq: n(r.moving_sumsq), loadN: n(r.load_n), loadSum: n(r.load_sum),
    fuelRateL: n(r.fuel_rate_l), airG: n(r.air_g), fuelN: n(r.fuel_n), diesel: Boolean(r.diesel),
    hardAccel: n(r.hard_accel), hardBrake: n(r.hard_brake), stopCount: n(r.stop_count), lastStopped: Boolean(r.last_stopped),
    speedingMs: n(r.speeding_ms),
  };
}

/** SEGMENT's and CONTINUE's `p`. */
const params = (o: SegmentOptions) => [o.gapMs, o.stationaryMs, o.motionKmh, STOPPED_KMH, HARD.accelMs2, HARD.brakeMs2, HARD.minSpeedKmh,
  REPORT_CARD.speedingKmh, o.impactG];

/** The spans CONTINUE may advance: in order, without startup or shutdown. */
const continuable = (spans: TripSpan[]) => spans.filter((s) => !s.late && !s.ignition);

/**
 * CONTINUE for the batch (db/fused.ts part): advances the open trips that continue through the batch unchanged in
 * shape; its rows are the devices it advanced. Null when no span qualifies.
 */
export function continuePart(spans: TripSpan[], o: SegmentOptions): SqlPart | null {
  const eligible = continuable(spans);
  if (!eligible.length) return null;
  return { statement: CONTINUE, bindings: [uuidArray(eligible.map((s) => s.deviceId)), uuidArray(eligible.flatMap((s) => s.messageIds)), ...params(o)] };
}

async function segment(trx: Knex, spans: TripSpan[], o: SegmentOptions) {
  const { rows } = await prepared(trx, SEGMENT, [
    uuidArray(spans.map((s) => s.deviceId)), timestampArray(spans.map((s) => s.firstTs)), boolArray(spans.map((s) => s.late)),
    boolArray(spans.map((s) => s.mayOpen)), uuidArray(spans.flatMap((s) => s.messageIds)), ...params(o),
  ]);
  const kept = (rows as { id: string; device_id: string; removed: boolean; created: boolean; closed: boolean }[]).filter((r) => !r.removed);
  const late = new Set(spans.filter((s) => s.late).map((s) => s.deviceId));
  return {
    // An open trip advanced in order changes no event: only new, closed or re-derived trips are diffed.
    eventful: kept.filter((r) => r.created || r.closed || late.has(r.device_id)).map((r) => r.id),
    closed: kept.filter((r) => r.closed).map((r) => r.id),
  };
}

/** Previews and report cards of closed trips: two statements. */
async function finalize(trx: Knex, closed: string[]): Promise<void> {
  if (!closed.length) return;
  const { rows } = await prepared(trx, FINALIZE, [PREVIEW_TOLERANCE_DEG, closed]);
  await reportCards(trx, rows as ClosedTripRow[]);
}

/** A closed trip's report card from its sums: what the report cards statement stores. */
export function reportCardOf(sums: TripSums): { grade: Grade; score: number | null } {
  const score = reportCardScore(tripStats(sums), sums.speedingMs);
  return { grade: gradeFor(score), score };
}

/** The report cards of closed trips, from their rows: one statement. */
async function reportCards(trx: Knex, rows: ClosedTripRow[]): Promise<void> {
  if (!rows.length) return;
  const cards = rows.map((r) => ({ r, ...reportCardOf(sumsOf(r)) }));
  await prepared(trx, UPSERT_REPORT_CARDS, [
    cards.map((c) => c.r.id), cards.map((c) => c.r.device_id), cards.map((c) => c.r.vehicle_id),
    cards.map((c) => new Date(c.r.stop_ts).toISOString()), cards.map((c) => c.grade), cards.map((c) => c.score),
  ]);
}

/** The trip events to store for the touched trips (stale ones deleted): one statement. */
async function tripEvents(trx: Knex, touched: string[]): Promise<NewEvent[]> {
  if (!touched.length) return [];
  const { rows } = await prepared(trx, EVENT_DIFF, [touched]);
  return (rows as { id: string; device_id: string; vehicle_id: string | null; ts: Date | string; event_type: string }[]).map((r) => ({
    deviceId: r.device_id, vehicleId: r.vehicle_id, timestamp: new Date(r.ts), eventType: r.event_type,
    objectType: 'trip', objectId: r.id, meta: { vehicleId: r.vehicle_id },
  }));
}

/**
 * The late spans past the bound (RecomputeBounds): those a splice applies to are spliced into their trip (two
 * statements for all of them: SPLICE, then the report cards of closed trips), the others leave the trips as they were;
 * both give way to the in-order rest of their batch. One statement (LATE_PLAN) when no span is past it. Returns the
 * spans for SEGMENT.
 */
async function boundLate(trx: Knex, spans: TripSpan[], o: SegmentOptions, b: RecomputeBounds): Promise<TripSpan[]> {
  const late = spans.filter((s) => s.late && s.parts);
  if (!late.length) return spans;
  const { rows } = await prepared(trx, LATE_PLAN, [
    uuidArray(late.map((s) => s.deviceId)), timestampArray(late.map((s) => s.parts!.lateFirst)),
    timestampArray(late.map((s) => s.parts!.lateLast)), boolArray(late.map((s) => s.parts!.lateIgnition)),
    timestampArray(late.map((s) => s.parts!.newest)), o.gapMs, b.maxMessages, b.maxAgeMs,
  ]);
  const plan = new Map((rows as { device_id: string; within: boolean; host_id: string | null }[]).map((r) => [r.device_id, r]));
  const past = late.filter((s) => !plan.get(s.deviceId)?.within);
  if (!past.length) return spans;
  const splice = past.filter((s) => plan.get(s.deviceId)?.host_id);
  if (splice.length) {
    const { rows: trips } = await prepared(trx, SPLICE, [
      uuidArray(splice.map((s) => plan.get(s.deviceId)!.host_id)), uuidArray(splice.map((s) => s.deviceId)),
      timestampArray(splice.map((s) => s.parts!.lateFirst)), timestampArray(splice.map((s) => s.parts!.lateLast)),
      uuidArray(splice.flatMap((s) => s.messageIds)), uuidArray(splice.flatMap((s) => s.parts!.lateIds)), ...params(o), SPLICE_WINDOW,
    ]);
    await reportCards(trx, (trips as (ClosedTripRow & { spliced: boolean })[]).filter((r) => r.spliced && r.stop_ts !== null));
  }
  const bounded = new Set(past.map((s) => s.deviceId));
  return spans.flatMap((s) => (bounded.has(s.deviceId) ? (s.parts!.rest ? [s.parts!.rest] : []) : [s]));
}

/**
 * After `continuePart` (its rows, or null when it had none): bounds what late frames re-derive (boundLate; `bounds`:
 * the configured lateRecomputeMaxMessages and lateRecomputeMaxAgeMs, which have their defaults in lib/config.ts), segments
 * the devices CONTINUE did not advance, finalizes the trips that closed and returns the events to store.
 */
export async function advanceTripsAfter(trx: Knex, spans: TripSpan[], continued: PartRow[] | null, o: SegmentOptions,
  bounds: RecomputeBounds): Promise<NewEvent[]> {
  const advanced = new Set((continued ?? []).map((r) => r.device_id as string));
  const rest = await boundLate(trx, spans.filter((s) => !advanced.has(s.deviceId)), o, bounds);
  if (!rest.length) return [];
  const { eventful, closed } = await segment(trx, rest, o);
  await finalize(trx, closed);
  return tripEvents(trx, eventful);
}

/** Closes every open trip not advanced for `gapMs` (end reason `silent`); returns the events to store. */
export async function sweepSilentTrips(trx: Knex, gapMs: number): Promise<NewEvent[]> {
  const { rows } = await prepared(trx, SWEEP, [gapMs]);
  const ids = (rows as { id: string }[]).map((r) => r.id);
  if (!ids.length) return [];
  await finalize(trx, ids);
  return tripEvents(trx, ids);
}
