import type { Knex } from 'knex';
import { progressColumns, RUN_COLUMNS, toRun, type Run, type RunOutcome, type RunProgress, type RunRow, type RunState } from './runs.repository.js';

/** A run a worker has just leased, with what the row held before (to tell a takeover from a fresh start). */
export interface ClaimedRun extends Run {
  previousState: RunState;
  /** The expired lease of a worker that died while driving it, or null. */ previousLeaseUntil: Date | null;
}

// The oldest active runs nobody holds (never leased, released, or whose worker stopped renewing).
const CLAIM = `
  WITH c AS (
    SELECT id, state AS previous_state, lease_until AS previous_lease_until FROM runs
    WHERE state <> 'finished' AND (lease_until IS NULL OR lease_until < now())
    ORDER BY created_at LIMIT ? FOR UPDATE SKIP LOCKED
  )
  UPDATE runs r SET lease_owner = ?, lease_until = now() + ? * interval '1 millisecond'
  FROM c WHERE r.id = c.id
  RETURNING ${RUN_COLUMNS.map((c) => `r.${c}`).join(', ')}, c.previous_state, c.previous_lease_until`;

const leaseUntil = (trx: Knex, leaseMs: number) => trx.raw("now() + ? * interval '1 millisecond'", [leaseMs]);

/** The run scheduler's statements: leases so that two workers never drive the same run. */
export function runLeasesRepository(knex: Knex) {
  const held = (trx: Knex, id: string, owner: string) => trx('runs').where({ id, lease_owner: owner }).whereNot('state', 'finished');

  return {
    async claim(owner: string, leaseMs: number, limit: number, trx: Knex = knex): Promise<ClaimedRun[]> {
      const result = await trx.raw(CLAIM, [limit, owner, leaseMs]);
      return (result.rows as (RunRow & { previous_state: RunState; previous_lease_until: Date | string | null })[]).map((r) => ({
        ...toRun(r), previousState: r.previous_state, previousLeaseUntil: r.previous_lease_until ? new Date(r.previous_lease_until) : null,
      }));
    },

    /** Current state of each run id (a deleted run is absent). */
    async states(ids: string[], trx: Knex = knex): Promise<Map<string, RunState>> {
      if (!ids.length) return new Map();
      const rows = await trx('runs').select('id', 'state').whereIn('id', ids);
      return new Map(rows.map((r: { id: string; state: RunState }) => [r.id, r.state]));
    },

    /** Extends the lease and records progress; false when the lease was lost or the run is gone. */
    async renew(id: string, owner: string, leaseMs: number, progress: RunProgress, trx: Knex = knex): Promise<boolean> {
      const n = await held(trx, id, owner).update({ lease_until: leaseUntil(trx, leaseMs), ...progressColumns(progress) });
      return Number(n) > 0;
    },

    /** starting → running when a pass begins (a stop request that came first wins). */
    async markRunning(id: string, owner: string, trx: Knex = knex): Promise<void> {
      await trx('runs').where({ id, lease_owner: owner, state: 'starting' })
        .update({ state: 'running', started_at: trx.raw('coalesce(started_at, ?::timestamptz)', [new Date()]) });
    },

    async finish(id: string, owner: string, outcome: RunOutcome, error: string | null, progress: RunProgress, trx: Knex = knex): Promise<void> {
      await held(trx, id, owner).update({
        ...progressColumns(progress), state: 'finished', outcome, error, ended_at: new Date(), lease_owner: null, lease_until: null,
      });
    },

    /**
     * Hands a run back on shutdown: it becomes `starting` again and the next scheduler restarts it
     * from the beginning; a run asked to stop ends as stopped.
     */
    async release(id: string, owner: string, progress: RunProgress, trx: Knex = knex): Promise<void> {
      await held(trx, id, owner).update({
        ...progressColumns(progress), lease_owner: null, lease_until: null,
        outcome: trx.raw("CASE WHEN state = 'stopping' THEN 'stopped' ELSE outcome END"),
        ended_at: trx.raw("CASE WHEN state = 'stopping' THEN ?::timestamptz ELSE ended_at END", [new Date()]),
        state: trx.raw("CASE WHEN state = 'stopping' THEN 'finished' ELSE 'starting' END"),
      });
    },
  };
}
export type RunLeasesRepository = ReturnType<typeof runLeasesRepository>;
