import type { Knex } from 'knex';
import { prepared } from '../prepared.js';
import type { ChangeRow, CurrentState, PlanEntry } from './evaluate.sql.js';

// Each statement takes the whole set as one JSON parameter: one statement per batch on both drivers.
const FORGET_LOG = `
  DELETE FROM rule_state_log l USING json_to_recordset(?::json) AS p(rule_id uuid, from_ts timestamptz)
  WHERE l.rule_id = p.rule_id AND l.ts >= p.from_ts`;

const APPEND_LOG = `
  INSERT INTO rule_state_log (rule_id, ts, message_id, states)
  SELECT r.rule_id, r.ts, r.message_id, r.states
  FROM json_to_recordset(?::json) AS r(rule_id uuid, ts timestamptz, message_id uuid, states boolean[])
  ON CONFLICT (rule_id, ts, message_id) DO UPDATE SET states = excluded.states`;

const SET_CURRENT = `
  UPDATE rule_states s SET evaluated = r.evaluated, covered = r.covered, states = r.states, last_ts = r.ts,
    last_message_id = r.message_id, updated_at = now()
  FROM json_to_recordset(?::json) AS r(rule_id uuid, ts timestamptz, message_id uuid, states boolean[],
    evaluated boolean, covered boolean)
  WHERE s.rule_id = r.rule_id`;

const row = (r: ChangeRow | CurrentState) =>
  ({ rule_id: r.ruleId, ts: r.ts.toISOString(), message_id: r.messageId, states: r.states, evaluated: r.evaluated, covered: r.covered });

/**
 * Stores what an evaluation found: recomputed rules forget their state changes from `from` on, the
 * changes found are logged, and each rule's state after its newest message becomes its current one.
 */
export async function saveStates(trx: Knex, recomputed: PlanEntry[], changes: ChangeRow[], current: CurrentState[]): Promise<void> {
  if (recomputed.length) {
    await prepared(trx, FORGET_LOG, [JSON.stringify(recomputed.map((p) => ({ rule_id: p.ruleId, from_ts: p.from.toISOString() })))]);
  }
  if (changes.length) await prepared(trx, APPEND_LOG, [JSON.stringify(changes.map(row))]);
  if (current.length) await prepared(trx, SET_CURRENT, [JSON.stringify(current.map(row))]);
}
