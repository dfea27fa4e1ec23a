import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { offsetPage, type OffsetWindow } from '../paging.js';

export type RunState = 'starting' | 'running' | 'stopping' | 'finished';
export type RunOutcome = 'completed' | 'stopped' | 'failed';

/** A dummy's run (docs/concepts/simulator.md); `finished` runs stay as history. */
export interface Run {
  id: string;
  dummyId: string;
  routeId: string;
  vin: string;
  repeat: boolean;
  speed: number;
  scenarios: string[];
  /** ms between telemetry frames. */ intervalMs: number;
  state: RunState;
  outcome: RunOutcome | null;
  error: string | null;
  repeatCount: number;
  /** km/h */ lastSpeed: number | null;
  /** s of wall-clock time left, as of progressAt. */ remainingSeconds: number | null;
  remainingMessages: number | null;
  progressAt: Date | null;
  /** While waiting: when the next pass starts. */ nextPassAt: Date | null;
  /** While waiting: why, in words. */ waitReason: string | null;
  /** Totals over every pass of the run. */ framesSent: number;
  /** m */ distance: number;
  /** ms of drive time covered */ driveMs: number;
  createdAt: Date;
  startedAt: Date | null;
  endedAt: Date | null;
}

/** Figures the scheduler writes every few seconds. */
export interface RunProgress {
  repeatCount: number;
  lastSpeed: number | null;
  remainingSeconds: number;
  remainingMessages: number;
  framesSent: number;
  distance: number;
  driveMs: number;
  nextPassAt: Date | null;
  waitReason: string | null;
}

export const RUN_COLUMNS = ['id', 'dummy_id', 'route_id', 'vin', 'repeat', 'speed', 'scenarios', 'interval_ms', 'state', 'outcome',
  'error', 'repeat_count', 'last_speed', 'remaining_seconds', 'remaining_messages', 'progress_at', 'next_pass_at', 'wait_reason', 'frames_sent', 'distance',
  'drive_ms', 'created_at', 'started_at', 'ended_at'];

/** A runs row (RUN_COLUMNS); `scenarios` is JSON text where a raw statement returns it unparsed. */
export interface RunRow {
  id: string; dummy_id: string; route_id: string; vin: string; repeat: boolean; speed: number; scenarios: string[] | string;
  interval_ms: number; state: RunState; outcome: RunOutcome | null; error: string | null; repeat_count: number;
  last_speed: number | null; remaining_seconds: number | null; remaining_messages: number | null; progress_at: Date | null;
  next_pass_at: Date | null; wait_reason: string | null; frames_sent: number; distance: number; drive_ms: number;
  created_at: Date; started_at: Date | null; ended_at: Date | null;
}

export function toRun(r: RunRow): Run {
  return {
    id: r.id, dummyId: r.dummy_id, routeId: r.route_id, vin: r.vin, repeat: r.repeat, speed: r.speed,
    scenarios: typeof r.scenarios === 'string' ? JSON.parse(r.scenarios) : r.scenarios, intervalMs: r.interval_ms,
    state: r.state, outcome: r.outcome, error: r.error, repeatCount: r.repeat_count, lastSpeed: r.last_speed,
    remainingSeconds: r.remaining_seconds, remainingMessages: r.remaining_messages, progressAt: r.progress_at, nextPassAt: r.next_pass_at,
    waitReason: r.wait_reason ?? null, framesSent: r.frames_sent, distance: r.distance, driveMs: r.drive_ms,
    createdAt: r.created_at, startedAt: r.started_at, endedAt: r.ended_at,
  };
}

export const progressColumns = (p: RunProgress) => ({
  repeat_count: p.repeatCount, last_speed: p.lastSpeed, remaining_seconds: p.remainingSeconds,
  remaining_messages: p.remainingMessages, frames_sent: p.framesSent, distance: p.distance, drive_ms: p.driveMs,
  next_pass_at: p.nextPassAt, wait_reason: p.waitReason, progress_at: new Date(),
});

export interface NewRun {
  dummyId: string; routeId: string; vin: string; repeat: boolean; speed: number; scenarios: string[]; intervalMs: number;
  /** Estimates shown until the scheduler reports. */ remainingSeconds: number; remainingMessages: number; nextPassAt: Date | null;
  waitReason: string | null;
}

/** The API side of runs; the scheduler's lease statements are in run-leases.repository.ts. */
export function runsRepository(knex: Knex) {
  const current = async (dummyId: string, trx: Knex = knex): Promise<Run | undefined> => {
    const row = await trx('runs').select(RUN_COLUMNS).where({ dummy_id: dummyId }).whereNot('state', 'finished').first();
    return row && toRun(row);
  };

  return {
    /** Undefined when the dummy already has an active run (the partial unique index decides, race-free). */
    async create(input: NewRun, trx: Knex = knex): Promise<Run | undefined> {
      const row = {
        id: randomUUID(), dummy_id: input.dummyId, route_id: input.routeId, vin: input.vin, repeat: input.repeat,
        speed: input.speed, scenarios: JSON.stringify(input.scenarios), interval_ms: input.intervalMs, state: 'starting',
        remaining_seconds: input.remainingSeconds, remaining_messages: input.remainingMessages, next_pass_at: input.nextPassAt,
        wait_reason: input.waitReason, created_at: new Date(),
      };
      const inserted = await trx('runs').insert(row).onConflict(trx.raw("(dummy_id) WHERE state <> 'finished'")).ignore()
        .returning(RUN_COLUMNS);
      return inserted.length ? toRun(inserted[0]) : undefined;
    },

    current,

    async get(dummyId: string, id: string, trx: Knex = knex): Promise<Run | undefined> {
      const row = await trx('runs').select(RUN_COLUMNS).where({ dummy_id: dummyId, id }).first();
      return row && toRun(row);
    },

    /** Newest first. */
    async list(dummyId: string, w: OffsetWindow, trx: Knex = knex) {
      const page = await offsetPage<RunRow>(() => trx('runs').select(RUN_COLUMNS).where({ dummy_id: dummyId }),
        [{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }], w);
      return { total: page.total, runs: page.rows.map(toRun) };
    },

    /**
     * Stops the dummy's active run: one no worker has picked up ends at once; any other is marked
     * `stopping` for its worker (which polls every ~0.5 s). Undefined when there is no active run.
     */
    async requestStop(dummyId: string, trx: Knex = knex): Promise<Run | undefined> {
      const ended = await trx('runs').where({ dummy_id: dummyId, state: 'starting' }).whereNull('lease_owner')
        .update({ state: 'finished', outcome: 'stopped', ended_at: new Date(), remaining_seconds: 0, next_pass_at: null, wait_reason: null }).returning(RUN_COLUMNS);
      if (ended.length) return toRun(ended[0]);
      await trx('runs').where({ dummy_id: dummyId }).whereIn('state', ['starting', 'running']).update({ state: 'stopping' });
      return current(dummyId, trx);
    },
  };
}
export type RunsRepository = ReturnType<typeof runsRepository>;
