import type { Knex } from 'knex';
import { prepared } from '../prepared.js';
import { boolArray, timestampArray, uuidArray } from '../binary-array.js';
import { EVENT_COLUMNS, EVENTS_AND_LEASED, eventsAndLeased, NOTIFIED, type EventRow } from '../repositories/notification-fanout.js';
import type { StoredEvent } from '../../lib/bus.js';
import { vehicleAt } from '../vehicle-at.sql.js';
import { RULE_EVENT_META } from './rule-event.sql.js';

/**
 * Rule evaluation over the devices' messages, in SQL (the database does the spatial and
 * time-series work; docs/concepts/rules-events-webhooks.md). Input: the rules to evaluate, each with the timestamp
 * `from` where its evaluation (re)starts. For each rule:
 *  1. seed: the boundary states in force before `from` (the last rule_state_log row before it: for a rule
 *     continuing live, its rule_states row, which holds the same);
 *  2. said: what each message at or after `from` says about each boundary: inside (true) or outside
 *     (false); a message without what the boundary needs (a location for radius — ST_DWithin on
 *     geography, meters — and polygon — ST_Covers —, the parameter for parametric — inclusive
 *     range, NULL bound = unbounded) says nothing and keeps the boundary's last known answer;
 *  3. change points: messages where a boundary's answer differs from its previous known one
 *     (ts, id order; the seed before all). Only these can change the rule, so the rest of the work
 *     runs on them alone, however many messages were read, and only for the rules that have one;
 *  4. at each point, every boundary's last known answer (a running count of answers numbers the
 *     groups, a group takes the answer that opened it); the rule is evaluated once every boundary
 *     is known and covered when all are inside;
 *  5. transitions: the rule became evaluated (firstEval) or its coverage flipped.
 *  6. what follows, in the same statement: the state log gets the change points (a recomputed rule first
 *     forgets those from `from` on that no longer hold), a rule's state changes with its last change point
 *     (rule_states is written only then, or after a recomputation), and the transitions become rule-enter /
 *     rule-leave events with their notifications. After a recomputation the stored rule events
 *     from `from` on must be the transitions found: events no longer implied are deleted (with their
 *     notifications), events still implied are kept as they are (their notifications are not sent twice),
 *     and only new transitions are stored.
 * Only messages stored after the rule was created count (`received_at >= created_at`): a rule sees
 * data from its creation on, and a late frame's recomputation sees the data the live path saw.
 */
const PLAN = `
  SELECT p.rule_id, p.from_ts, p.late, r.device_id, r.created_at,
    CASE WHEN p.late THEN seed.states ELSE rs.states END AS seed
  FROM unnest(?::uuid[], ?::timestamptz[], ?::boolean[]) AS p(rule_id, from_ts, late)
  JOIN rules r ON r.id = p.rule_id
  LEFT JOIN rule_states rs ON rs.rule_id = p.rule_id
  -- A rule continuing live is seeded from rule_states, which holds its last logged states (written with every change
  -- point, and after every recomputation; a rule without its row starts unknown, as without a log); only a recomputed
  -- rule looks up the log before \`from\`. \`p.late\` is a
  -- one-time filter here, so a live rule skips the index scan.
  LEFT JOIN LATERAL (
    SELECT l.states FROM rule_state_log l WHERE p.late AND l.rule_id = p.rule_id AND l.ts < p.from_ts
    ORDER BY l.ts DESC, l.message_id DESC LIMIT 1
  ) seed ON true`;

/** The same event: same rule, type, message and firstEval. */
const SAME_EVENT = (a: string, b: string) =>
  `${a}.rule_id = ${b}.rule_id AND ${a}.event_type = ${b}.event_type AND ${a}.message_id = ${b}.message_id AND ${a}.first_eval = ${b}.first_eval`;

/**
 * Parameters: rule ids, their `from` timestamps and late flags, the three link templates (rule-event.sql.ts), then
 * the lease (ms) of the notifications handed to this process's worker (null: none, they wait for a claim). Returns
 * EVENTS_AND_LEASED: a row per event stored, then a row per notification leased.
 */
export const RULES_SQL = `
WITH plan AS MATERIALIZED (${PLAN}),
links AS (SELECT ?::text AS self_t, ?::text AS events_t, ?::text AS subs_t),
lease AS (SELECT ?::bigint AS ms),
-- the rules with more than one boundary: only theirs need the seed as rows and the grid below to know every boundary at
-- each change point
multi AS (SELECT b.rule_id FROM plan p JOIN rule_boundaries b ON b.rule_id = p.rule_id AND b.position = 2),
-- MATERIALIZED: inlined, the predicate ran twice per (message, boundary): in the join filter that \`changed\`'s
-- \`said IS NOT NULL\` became, and again in the output
said AS MATERIALIZED (
  SELECT p.rule_id, m.id, m.ts, b.position, p.seed[b.position] AS seed,
    CASE b.type
      WHEN 'radius' THEN ST_DWithin(m.location::geography, b.center, b.radius)
      WHEN 'polygon' THEN ST_Covers(b.area, m.location)
      -- the parameter's slot (the boundary's generated column, migration 035): a number, or null when the message
      -- did not carry it (a parameter without a slot has no numbers: never said)
      ELSE m.num[b.slot] >= coalesce(b.min, '-Infinity'::float8) AND m.num[b.slot] <= coalesce(b.max, 'Infinity'::float8)
    END AS said
  FROM plan p
  -- per rule through messages_device_ts_id: OFFSET 0 keeps the planner from flattening the lateral into a hash join
  -- over a sequential scan of every stored message
  CROSS JOIN LATERAL (SELECT mm.id, mm.ts, mm.location, mm.num FROM messages mm WHERE mm.device_id = p.device_id
    AND mm.ts >= p.from_ts AND mm.received_at >= p.created_at OFFSET 0) m
  JOIN rule_boundaries b ON b.rule_id = p.rule_id
  -- the seed as the first row of a boundary, for the grid's rules only: the others read it as lag's default (as rows,
  -- the seeds of all 800 rules of a live batch went through the sort and windows below, a third of their rows)
  UNION ALL
  SELECT p.rule_id, NULL::uuid, '-infinity'::timestamptz, b.position, p.seed[b.position], p.seed[b.position]
  FROM plan p JOIN rule_boundaries b ON b.rule_id = p.rule_id WHERE p.rule_id IN (SELECT rule_id FROM multi)
),
changed AS (
  SELECT s.*, s.id IS NULL OR s.said IS DISTINCT FROM lag(s.said, 1, s.seed) OVER w AS changed,
    lag(s.said, 1, s.seed) OVER w AS said_before
  FROM said s WHERE s.said IS NOT NULL OR s.id IS NULL
  WINDOW w AS (PARTITION BY s.rule_id, s.position ORDER BY s.ts, s.id NULLS FIRST)
),
change AS (SELECT c.rule_id, c.id, c.ts, c.position, c.said FROM changed c WHERE c.changed),
-- only rules with a change point past their seed go on: the rest (most rules of a live batch) can have no transition and
-- no log row (a recomputed one goes back to its seed in new_state), and carrying their seed through the grid and its
-- windows was a large share of the statement
points AS (
  SELECT DISTINCT c.rule_id, c.id, c.ts FROM change c WHERE c.rule_id IN (SELECT x.rule_id FROM change x WHERE x.id IS NOT NULL)
    AND c.rule_id IN (SELECT rule_id FROM multi)
),
grid AS (
  SELECT pt.rule_id, pt.id, pt.ts, b.position, c.said
  FROM points pt JOIN rule_boundaries b ON b.rule_id = pt.rule_id
  LEFT JOIN change c ON c.rule_id = pt.rule_id AND c.position = b.position AND c.ts = pt.ts AND c.id IS NOT DISTINCT FROM pt.id
),
grouped AS (
  SELECT g.*, count(g.said) OVER (PARTITION BY g.rule_id, g.position ORDER BY g.ts, g.id NULLS FIRST) AS grp FROM grid g
),
carried AS (
  SELECT g.rule_id, g.id, g.ts, g.position,
    first_value(g.said) OVER (PARTITION BY g.rule_id, g.position, g.grp ORDER BY g.ts, g.id NULLS FIRST) AS known
  FROM grouped g
),
per_point AS (
  SELECT c.rule_id, c.id, c.ts, array_agg(c.known ORDER BY c.position) AS states,
    bool_and(c.known IS NOT NULL) AS evaluated,
    bool_and(c.known IS NOT NULL) AND coalesce(bool_and(c.known), false) AS covered
  FROM carried c GROUP BY c.rule_id, c.id, c.ts
),
compared AS (
  SELECT pp.*, lag(pp.evaluated) OVER w AS prev_evaluated, lag(pp.covered) OVER w AS prev_covered
  FROM per_point pp WINDOW w AS (PARTITION BY pp.rule_id ORDER BY pp.ts, pp.id NULLS FIRST)
),
-- the change points: rule_state_log rows; a transition is one where the rule became evaluated or its coverage flipped.
-- A rule of one boundary needs no grid: its change points are its boundary's (each one known, its state the answer), and
-- each is a transition (the answer differs from the one before it: the rule was unknown, or its coverage flips); the
-- grid's windows and sorts would be work for nothing for those rules
changes AS MATERIALIZED (
  SELECT c.rule_id, c.id AS message_id, c.ts, c.states, c.covered,
    c.evaluated AND (NOT c.prev_evaluated OR c.covered <> c.prev_covered) AS transition,
    NOT c.prev_evaluated AS first_eval
  FROM compared c WHERE c.id IS NOT NULL
  UNION ALL
  SELECT c.rule_id, c.id, c.ts, ARRAY[c.said], c.said, true, c.said_before IS NULL
  FROM changed c WHERE c.changed AND c.id IS NOT NULL AND c.rule_id NOT IN (SELECT rule_id FROM multi)
),
-- the new state of each rule that has one: the last change point's; a recomputed rule without change points from
-- \`from\` on is back to the state in force before it (the seed, else unknown)
last_change AS (
  SELECT DISTINCT ON (c.rule_id) c.rule_id, c.states FROM changes c ORDER BY c.rule_id, c.ts DESC, c.message_id DESC
),
new_state AS (
  SELECT x.rule_id, x.states, x.known AS evaluated, x.known AND array_position(x.states, false) IS NULL AS covered
  FROM (
    SELECT y.*, cardinality(y.states) = y.boundaries AND array_position(y.states, NULL) IS NULL AS known
    FROM (
      SELECT p.rule_id, n.boundaries, coalesce(lc.states, p.seed, array_fill(NULL::boolean, ARRAY[n.boundaries])) AS states
      FROM plan p LEFT JOIN last_change lc ON lc.rule_id = p.rule_id
      -- counted for these rules only (in plan, for every rule of the batch: 800 index scans where ~200 rules change)
      CROSS JOIN LATERAL (SELECT count(*)::int AS boundaries FROM rule_boundaries b WHERE b.rule_id = p.rule_id) n
      WHERE lc.rule_id IS NOT NULL OR p.late
      -- OFFSET 0: computed once per rule (flattened, each use of \`states\` would repeat the coalesce)
      OFFSET 0) y
    OFFSET 0) x
),
-- The rules this statement writes for (new_state's: those with a change point, and the recomputed ones), key-share
-- locked: a rule deleted meanwhile waits for this batch to commit (its log then goes with it: rules_delete_state_log),
-- and one deleted since this statement's snapshot is not locked (READ COMMITTED: its newest version is gone) and gets
-- nothing written. Every write below is for these rules alone. Locked when the batch's rules were read (all of them, for
-- a few with change points), each lock was a WAL record for every rule of every batch.
locked AS (SELECT r.id FROM rules r WHERE r.id IN (SELECT rule_id FROM new_state) FOR KEY SHARE OF r),
forgotten AS (
  DELETE FROM rule_state_log l USING plan p
  WHERE p.late AND l.rule_id = p.rule_id AND l.ts >= p.from_ts AND p.rule_id IN (SELECT id FROM locked)
    AND NOT EXISTS (SELECT 1 FROM changes c WHERE c.rule_id = l.rule_id AND c.ts = l.ts AND c.message_id = l.message_id)
  RETURNING 1
),
logged AS (
  INSERT INTO rule_state_log (rule_id, ts, message_id, states)
  SELECT c.rule_id, c.ts, c.message_id, c.states FROM changes c WHERE c.rule_id IN (SELECT id FROM locked)
  ON CONFLICT (rule_id, ts, message_id) DO UPDATE SET states = excluded.states
  RETURNING 1
),
set_state AS (
  UPDATE rule_states s SET evaluated = c.evaluated, covered = c.covered, states = c.states, updated_at = now()
  FROM new_state c WHERE s.rule_id = c.rule_id AND c.rule_id IN (SELECT id FROM locked)
  RETURNING 1
),
transitions AS (
  SELECT c.rule_id, c.message_id, c.ts, c.covered, c.first_eval, CASE WHEN c.covered THEN 'rule-enter' ELSE 'rule-leave' END AS event_type
  FROM changes c WHERE c.transition AND c.rule_id IN (SELECT id FROM locked)
),
-- a recomputed rule's stored events from \`from\` on
stored AS (
  SELECT e.id, e.object_id AS rule_id, e.event_type, (e.meta -> 'message' ->> 'id')::uuid AS message_id,
    coalesce((e.meta ->> 'firstEval')::boolean, false) AS first_eval
  FROM plan p JOIN events e ON e.object_type = 'rule' AND e.object_id = p.rule_id AND e.ts >= p.from_ts
  WHERE p.late AND p.rule_id IN (SELECT id FROM locked)
),
superseded AS (
  DELETE FROM events e USING stored s
  WHERE e.id = s.id AND NOT EXISTS (SELECT 1 FROM transitions t WHERE ${SAME_EVENT('t', 's')})
  RETURNING 1
),
-- \`stored\` to the millisecond like every stored time: it is the notifications' created_at, which their stream pages
-- compare in epoch milliseconds
ev AS (
  INSERT INTO events (id, device_id, vehicle_id, application_id, ts, stored, event_type, object_type, object_id, meta)
  SELECT gen_random_uuid(), r.device_id, ${vehicleAt('r.device_id', 't.ts')}, r.application_id, t.ts,
    date_trunc('milliseconds', statement_timestamp()), t.event_type, 'rule', r.id, ${RULE_EVENT_META}
  FROM transitions t
  -- the rule by its key: joined to plan (two CTEs, their rows estimated at a few), the join became a nested loop
  -- comparing every transition with every planned rule
  JOIN rules r ON r.id = t.rule_id
  JOIN messages m ON m.device_id = r.device_id AND m.ts = t.ts AND m.id = t.message_id
  CROSS JOIN links
  WHERE NOT EXISTS (SELECT 1 FROM stored s WHERE ${SAME_EVENT('s', 't')})
  RETURNING ${EVENT_COLUMNS.join(', ')}
),
${NOTIFIED('ev')}
${EVENTS_AND_LEASED('all')}`;

/** A rule to evaluate from `from` on; `late`: its stored state and events from `from` on are recomputed. */
export interface PlanEntry { ruleId: string; from: Date; late: boolean }

/** A rule event the statement stored. */
export interface StoredRuleEvent extends StoredEvent { applicationId: string; timestamp: Date; objectId: string }

/**
 * Evaluates the planned rules of every device of a batch at once (each rule reads its own device's messages),
 * stores what follows (state log, current states, events and their notifications) and returns the events stored:
 * one statement, however many devices. Prepared (db/prepared.ts); JIT is off on every connection (db/connection.ts).
 * With `leaseMs`, the notifications are stored leased for that long and come back with their events (`leased`, each
 * with its event's row), for this process's worker to deliver without claiming them (lib/bus.ts).
 */
export async function evaluateAndStore(trx: Knex, plan: PlanEntry[], links: readonly string[],
  leaseMs: number | null = null): Promise<StoredRuleEvent[]> {
  if (!plan.length) return [];
  const { rows } = await prepared(trx, RULES_SQL, [uuidArray(plan.map((p) => p.ruleId)), timestampArray(plan.map((p) => p.from)),
    boolArray(plan.map((p) => p.late)), ...links, leaseMs]);
  // rule events: each belongs to its rule's application, and its object is the rule
  const { events, leased } = eventsAndLeased<EventRow & { application_id: string; object_id: string }>(rows);
  return [...events.values()].map((r) => ({
    id: r.id, deviceId: r.device_id, eventType: r.event_type, applicationId: r.application_id, timestamp: new Date(r.ts),
    objectId: r.object_id, ...(leaseMs === null ? {} : { leased: leased.get(r.id) ?? [] }),
  }));
}
