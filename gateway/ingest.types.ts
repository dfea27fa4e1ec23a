// The contract between the ingest pipeline and the stages that derive state from stored messages
// (vehicles, device events; rules, trips, distance as their issues land). See ingest.stages.ts.
import type { Knex } from 'knex';
import type { Config } from '../lib/config.js';
import type { Logger } from '../lib/logger.js';
import type { Repositories } from '../db/index.js';
import type { NewEvent } from '../db/repositories/events.repository.js';
import type { StoredEvent } from '../lib/bus.js';
import type { DeadLetterRow } from '../db/repositories/ingest.repository.js';
import type { StoredStep } from '../db/distance/steps.sql.js';
import { runParts, type PartRow, type SqlPart } from '../db/fused.js';
import type { DecodedFrame, FrameKind } from './frame.decoder.js';

/** A message committed in this batch (never a duplicate), with what its frame carried besides telemetry. */
export interface IngestedMessage {
  id: string;
  deviceId: string;
  timestamp: Date;
  kind: FrameKind;
  frameId: string | null;
  /** Catalog keys plus `location` (GeoJSON Point) and `accel`: only what this frame carried. */
  data: Record<string, unknown>;
  /** Degrees (WGS 84); null when the frame had no location. */
  lat: number | null;
  lon: number | null;
  gps: DecodedFrame['gps'];
  vin: string | null;
  dtcs: string[] | null;
  battery: DecodedFrame['battery'];
  collision: DecodedFrame['collision'];
  receivedAt: Date;
  /** The vehicle the device was in at `timestamp`; set by the vehicles stage, null when none is known. */
  vehicleId: string | null;
  /** Its distance step as the insert measured and stored it (db/distance/steps.sql.ts); set by the pipeline. */
  step?: StoredStep;
}

export interface DeviceBatch {
  deviceId: string;
  /** This batch's new messages of the device, oldest first (ties keep arrival order). */
  messages: IngestedMessage[];
  /**
   * The device's newest stored timestamp before this batch, or null. A batch starting before it arrived late
   * (isLate): a stage keeping state over time (trips, collisions) re-derives from the first late message.
   */
  previousLatest: Date | null;
  /** The batch's frames of the device that were not stored: stored before (re-sends; absent when none). */
  skipped?: IngestedMessage[];
}

/**
 * Whether a stage's span, starting at message `from` of the device's batch, is late: older than the device's newest
 * stored message before the batch. A span starting at that very millisecond is in order (frames stamped with Date.now()
 * share milliseconds) unless `tiesLate`, for a stage that would rather re-derive than miss one. A stage whose span
 * starts at its first relevant message (collisions, trouble codes) asks about that message, so the batch's late frames
 * that the stage does not read leave it on its in-order path.
 */
export function isLateFrom(d: DeviceBatch, from: IngestedMessage, tiesLate = false): boolean {
  if (d.previousLatest === null) return false;
  const first = from.timestamp.getTime();
  const latest = d.previousLatest.getTime();
  return tiesLate ? first <= latest : first < latest;
}

/** Whether the batch's first message is late (isLateFrom): the span of a stage that reads every message (trips). */
export const isLate = (d: DeviceBatch, tiesLate = false): boolean => isLateFrom(d, d.messages[0], tiesLate);

export interface StageContext {
  /** The batch transaction: everything a stage writes commits, or not, with the messages. */
  trx: Knex;
  devices: DeviceBatch[];
  /**
   * The rows of this stage's `early` read, run in the insert's round trip (absent or null: it did not run, and the
   * stage makes the read itself).
   */
  early?: PartRow[] | null;
  /**
   * The lease of the notification worker of this process (lib/bus.ts handOffLeaseMs), read once per batch: a stage
   * storing events stores their notifications leased to it, and returns them with the events (absent or null: none).
   */
  leaseMs?: number | null;
}

export interface IngestStage {
  name: string;
  /**
   * Optional work before the transaction opens (no lock held), e.g. decoding VINs off the main thread. It sees
   * the candidate messages: duplicates not yet removed, `previousLatest` not yet known.
   */
  prepare?(devices: DeviceBatch[]): Promise<void>;
  /**
   * Runs in the batch transaction, in list order. The events it returns are stored through events.insert; a stage
   * whose own statement stores its events (with their notifications: rules) returns them as `{ stored }`.
   */
  apply(ctx: StageContext): Promise<StageEvents>;
  /**
   * For a stage whose batch work starts with one statement that reads nothing the stages around it write: the
   * pipeline runs the statements of consecutive such stages in one round trip (db/fused.ts), then each stage's
   * `after`, in list order. Doing the same as `apply` (which `plannedStage` gives) is the stage's contract.
   */
  plan?(ctx: StageContext): StagePlan;
  /**
   * A read the stage's apply or plan starts with that depends only on the batch's candidate devices and messages
   * (duplicates not yet removed, so a superset) and on nothing the batch transaction writes: the pipeline runs it
   * in the same round trip as the insert and hands its rows over as `ctx.early`. Null: not this batch.
   */
  early?(candidates: DeviceBatch[]): SqlPart | null;
  close?(): Promise<void>;
}

/** A stage's events: to store, or already stored by its own statement. */
export type StageEvents = NewEvent[] | { stored: StoredEvent[] };

/** A stage whose events the pipeline stores (events.insert): every stage but rules. */
export interface EventStage extends IngestStage {
  apply(ctx: StageContext): Promise<NewEvent[]>;
}

/** A stage's statement (null: none this batch) and what follows once its rows are back. */
export interface StagePlan {
  part: SqlPart | null;
  after(rows: PartRow[] | null): Promise<NewEvent[]>;
}

/** A stage that is its plan: `apply` runs the plan on its own. */
export function plannedStage(name: string, plan: (ctx: StageContext) => StagePlan): EventStage {
  return {
    name, plan,
    async apply(ctx) {
      const p = plan(ctx);
      const [rows] = await runParts(ctx.trx, [p.part]);
      return p.after(rows);
    },
  };
}

export interface StageDeps {
  config: Config;
  knex: Knex;
  repos: Repositories;
  log: Logger;
}

export type StageFactory<S extends IngestStage = IngestStage> = (deps: StageDeps) => S;

/** What one MQTT payload on a frames topic brings: its good frames and the refusals to keep. */
export interface IngestJob {
  deviceId: string;
  topic: string;
  /** The payload as received (kept in a dead letter if its frames cannot be stored). */
  payload: Buffer;
  frames: DecodedFrame[];
  /** Position of each good frame in the payload. */
  frameIndexes: number[];
  deadLetters: DeadLetterRow[];
  receivedAt: Date;
}
