// Distance and odometer triggers, set-based per ingest batch (docs/concepts/distance-and-odometers.md): one statement.
import { MAX_MILESTONES_PER_BATCH } from './model.js';
import { STEP_CTES, type StoredStep } from './steps.sql.js';
import type { PartRow, SqlPart, SqlStatement } from '../fused.js';
import { boolArray, float8Array, textArray, timestampArray, uuidArray } from '../binary-array.js';

export interface TriggerFiring {
  triggerId: string; vehicleId: string; applicationId: string; deviceId: string; ts: Date;
  type: 'specific' | 'from_now' | 'milestone'; thresholdM: number;
  /** The trigger's `events` count including this firing. */
  events: number;
  /** Meters: the odometer estimate at the step that met the trigger. */
  estimatedOdometer: number;
}

/**
 * After the steps, the batch's deltas in time order per vehicle give the vehicle's travelled total after each step
 * (`points`, from the new totals); with the trigger application's latest reading (looked up once per trigger in
 * `anchored`, not once per point), the odometer estimate there:
 * reading + (total at the point − total at the reading's date), which also holds for a point stamped before the
 * reading (it is then below the reading). A trigger fires at the first point whose value (estimate; travelled total
 * for from_now) reaches `next_m`; a milestone fires once per multiple the batch's distance crosses (up to
 * MAX_MILESTONES_PER_BATCH per batch; multiples a new reading jumped over, below the estimate before the batch, are
 * skipped) and moves `next_m` past them; the others are then `done`. A trigger sees the distance ingested after it was
 * set, whatever the frames' timestamps: a backlog uploaded later counts, and so do the simulator's time-compressed
 * runs, whose frames are stamped ahead of the wall clock (simulator/clock.ts); a batch still open when the trigger is set is
 * neither in its starting total nor evaluated for it. The UPDATE re-checks `next_m` and `done` on the row it locks,
 * so two batches committing concurrently cannot fire the same target twice.
 */
const DISTANCE_CTES = `
  ${STEP_CTES},
  base AS (
    SELECT t.vehicle_id, t.travelled_m - d.total AS before
    FROM totals t JOIN (SELECT vehicle_id, sum(meters) AS total FROM delta GROUP BY vehicle_id) d ON d.vehicle_id = t.vehicle_id),
  points AS (
    SELECT d.vehicle_id, d.device_id, d.ts, b.before,
      b.before + sum(d.meters) OVER (PARTITION BY d.vehicle_id ORDER BY d.ts, d.device_id ROWS UNBOUNDED PRECEDING) AS travelled
    FROM delta d JOIN base b ON b.vehicle_id = d.vehicle_id),
  anchored AS MATERIALIZED (
    SELECT t.id AS trigger_id, t.vehicle_id, t.type, t.threshold_m, t.next_m, a.reading_m,
      coalesce(r.travelled_m, a.travelled_m) AS anchor_m
    FROM odometer_triggers t
    LEFT JOIN LATERAL (
      SELECT o.id, o.reading_m, o.travelled_m FROM odometers o
      WHERE o.vehicle_id = t.vehicle_id AND o.application_id = t.application_id
      ORDER BY o.date DESC, o.created_at DESC LIMIT 1) a ON true
    LEFT JOIN readings r ON r.id = a.id
    WHERE NOT t.done AND t.vehicle_id IN (SELECT vehicle_id FROM base)),
  cand AS (
    SELECT t.trigger_id, t.type, t.threshold_m, t.next_m, p.device_id, p.ts, p.travelled,
      coalesce(t.reading_m + p.travelled - t.anchor_m, p.travelled) AS estimate,
      coalesce(t.reading_m + p.before - t.anchor_m, p.before) AS estimate_before
    FROM anchored t JOIN points p ON p.vehicle_id = t.vehicle_id),
  valued AS (SELECT c.*, CASE WHEN c.type = 'from_now' THEN c.travelled ELSE c.estimate END AS value FROM cand c),
  reach AS (
    SELECT trigger_id, type, threshold_m, next_m, max(value) AS top,
      CASE WHEN type = 'milestone' THEN greatest(next_m, (floor(min(estimate_before) / threshold_m) + 1) * threshold_m)
        ELSE next_m END AS first_target
    FROM valued GROUP BY trigger_id, type, threshold_m, next_m
    HAVING max(value) >= next_m),
  targets AS (
    SELECT r.trigger_id, r.next_m, r.first_target + k * r.threshold_m AS target
    FROM reach r CROSS JOIN LATERAL generate_series(0, CASE WHEN r.type = 'milestone'
      THEN least(floor((r.top - r.first_target) / r.threshold_m), ${MAX_MILESTONES_PER_BATCH - 1})::int ELSE 0 END) AS k),
  fire AS (
    SELECT DISTINCT ON (tg.trigger_id, tg.target) tg.trigger_id, tg.next_m, tg.target, v.device_id, v.ts, v.estimate
    FROM targets tg JOIN valued v ON v.trigger_id = tg.trigger_id AND v.value >= tg.target
    ORDER BY tg.trigger_id, tg.target, v.ts, v.value),
  counted AS (SELECT trigger_id, next_m, count(*)::int AS n, max(target) AS last_target FROM fire GROUP BY trigger_id, next_m),
  updated AS (
    UPDATE odometer_triggers t SET events = t.events + c.n, done = t.type <> 'milestone',
      next_m = CASE WHEN t.type = 'milestone' THEN c.last_target + t.threshold_m ELSE t.next_m END
    FROM counted c WHERE t.id = c.trigger_id AND NOT t.done AND t.next_m = c.next_m
    RETURNING t.id, t.vehicle_id, t.application_id, t.type, t.threshold_m, t.events, c.n)`;

const DISTANCE_MAIN = `
  SELECT u.id AS trigger_id, u.vehicle_id, u.application_id, u.type, u.threshold_m, f.device_id, f.ts, f.estimate,
    u.events - u.n + row_number() OVER (PARTITION BY u.id ORDER BY f.target) AS events
  FROM fire f JOIN updated u ON u.id = f.trigger_id
  ORDER BY f.ts, u.id, f.target`;

const DISTANCE: SqlStatement = { ctes: DISTANCE_CTES, main: DISTANCE_MAIN };

/** A device's new messages in a batch, as the distance statement needs them (the gateway's DeviceBatch is one). */
export interface StepBatch {
  deviceId: string;
  /** The device's newest stored timestamp before the batch (null: none): a message at or before it is late. */
  previousLatest: Date | null;
  /** `vehicleId`: the vehicle the stages gave the message; `step`: as its insert stored it (absent: not measured). */
  messages: { id: string; timestamp: Date; vehicleId: string | null; step?: StoredStep | null }[];
  /** The batch's frames of the device that the insert skipped (stored before). */
  skipped?: { id: string; timestamp: Date }[];
}

/** STEP_CTES' bindings: one array per column (new messages, moved vehicles, skipped frames), binary (db/binary-array.ts). */
function stepBindings(devices: StepBatch[]): unknown[] {
  const ids: string[] = [], deviceIds: string[] = [], ts: Date[] = [], meters: number[] = [], sources: string[] = [];
  const vehicles: (string | null)[] = [], late: boolean[] = [];
  const movedIds: string[] = [], movedVehicles: (string | null)[] = [], movedDevices: string[] = [], movedTs: Date[] = [];
  const skippedDevices: string[] = [], skippedTs: Date[] = [], skippedIds: string[] = [];
  for (const d of devices) {
    const latest = d.previousLatest?.getTime() ?? -Infinity;
    for (const m of d.messages) {
      const step = m.step ?? null;
      ids.push(m.id); deviceIds.push(d.deviceId); ts.push(m.timestamp); meters.push(step?.meters ?? 0);
      sources.push(step?.source ?? 'none'); vehicles.push(m.vehicleId); late.push(m.timestamp.getTime() <= latest);
      if (step && step.vehicleId !== m.vehicleId) {
        movedIds.push(m.id); movedVehicles.push(m.vehicleId); movedDevices.push(d.deviceId); movedTs.push(m.timestamp);
      }
    }
    for (const k of d.skipped ?? []) { skippedDevices.push(d.deviceId); skippedTs.push(k.timestamp); skippedIds.push(k.id); }
  }
  return [uuidArray(ids), uuidArray(deviceIds), timestampArray(ts), float8Array(meters), textArray(sources), uuidArray(vehicles),
    boolArray(late), uuidArray(movedIds), uuidArray(movedVehicles), uuidArray(movedDevices), timestampArray(movedTs), uuidArray(skippedDevices), timestampArray(skippedTs), uuidArray(skippedIds)];
}

/**
 * The batch's distance statement (a db/fused.ts part), run after its messages are stored with their steps: re-measures
 * the steps its late and skipped frames changed (db/distance/steps.sql.ts), moves the vehicles' totals, and fires the
 * triggers the new distance reached; `firings` reads its rows. Null without messages. At ingest it shares its round
 * trip with the trips continuation.
 */
export function distancePart(devices: StepBatch[]): SqlPart | null {
  return devices.some((d) => d.messages.length) ? { statement: DISTANCE, bindings: stepBindings(devices) } : null;
}

/** A row of the distance part: a trigger the new distance reached (JSON values: the time as ISO text). */
type FiringRow = {
  trigger_id: string; vehicle_id: string; application_id: string; device_id: string; ts: string; type: TriggerFiring['type'];
  threshold_m: number | string; events: number | string; estimate: number | string;
};

/** One firing per event to store, from the distance part's rows, in time order. */
export function firings(rows: PartRow[] | null): TriggerFiring[] {
  return ((rows ?? []) as FiringRow[]).map((r) => ({
    triggerId: r.trigger_id, vehicleId: r.vehicle_id, applicationId: r.application_id, deviceId: r.device_id,
    ts: new Date(r.ts), type: r.type, thresholdM: Number(r.threshold_m), events: Number(r.events), estimatedOdometer: Number(r.estimate),
  }));
}
