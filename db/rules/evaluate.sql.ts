import type { Knex } from 'knex';
import { prepared } from '../prepared.js';
import { boolArray, timestampArray, uuidArray } from '../binary-array.js';
import { EVENT_COLUMNS, EVENTS_AND_LEASED, eventsAndLeased, NOTIFIED, type EventRow } from '../repositories/notification-fanout.js';
import type { StoredEvent } from '../../lib/bus.js';
import { vehicleAt } from '../vehicle-at.sql.js';
import { RULE_EVENT_META, ruleEventMeta } from './rule-event.sql.js';

/**
 * Rule evaluation over the devices' messages, in SQL (the database does the spatial and
 * time-series work; docs/concepts/rules-events-webhooks.md). Input: the rules to evaluate, each with the timestamp
 * `from` where its evaluation (re)starts. For each rule:
 *  1. seed: the boundary states in force before `from` (the last rule_state_log row before it: for a rule
 *     continuing live, its rule_states row, which holds the same), with the coverage run in force (dwell, below);
 *  2. said: what each message at or after `from` says about each boundary: inside (true) or outside
 *     (false); a message without what the boundary needs (a location for radius — ST_DWithin on
 *     geography, meters —, polygon — ST_Covers — and corridor — ST_DWithin of the line —, the parameter for
 *     parametric — inclusive range, NULL bound = unbounded) says nothing and keeps the boundary's last known answer.
 *     So does a message in a boundary's hysteresis band (past the fence by at most `bufferMeters`, past a bound by at
 *     most `deadband`): only leaving the band says outside. A rule with a schedule reads only the messages stamped
 *     inside its windows;
 *  2b. crossings (rules with detectCrossings): a segment between two consecutive fixes, both outside, that passes
 *     through the fence says inside then outside, at the times interpolated along the segment; both change points
 *     sit at the later fix (ordered before its own answer), so that every order of arrival places them alike;
 *  3. change points: messages where a boundary's answer differs from its previous known one
 *     (ts, id, step order; the seed before all). Only these can change the rule, so the rest of the work
 *     runs on them alone, however many messages were read, and only for the rules that have one;
 *  4. at each point, every boundary's last known answer (a running count of answers numbers the
 *     groups, a group takes the answer that opened it); the rule is evaluated once every boundary
 *     is known and covered when all are inside;
 *  5. transitions: the rule became evaluated (firstEval) or its coverage flipped. Each begins a coverage run;
 *  5b. dwell (rules with minInsideSeconds / minOutsideSeconds): a run counts once it has lasted its dwell (the next
 *     run began that much later, or a message read that much later still finds it), and the rule reports a change
 *     only at a run that counts and differs from what it last reported (`held`): the event is stamped when the run
 *     began. A rule without dwell reports every transition, as its runs all count at once;
 *  6. what follows, in the same statement: the state log gets the change points (a recomputed rule first
 *     forgets those from `from` on that no longer hold), a rule's state changes with its last change point
 *     (rule_states is written only then, after a recomputation, or when its run in force came to count), and the
 *     reported changes become rule-enter / rule-leave events with their notifications. After a recomputation the
 *     stored rule events it can imply (those of messages from `from` on, and the run in force's) must be the ones
 *     found: events no longer implied are deleted (with their notifications), events still implied are kept as they
 *     are (their notifications are not sent twice), and only new ones are stored.
 * Only messages stored after the rule was created count (`received_at >= created_at`): a rule sees
 * data from its creation on, and a late frame's recomputation sees the data the live path saw.
 */

/** The longest gap between two fixes a crossing is looked for in: past it, a straight line says little of the path. */
export const MAX_CROSSING_GAP = '15 minutes';

/** Whether a rule `p` (active_week, active_tz) reads a message stamped `ts`: always without a schedule. */
const active = (p: string, ts: string) => `(${p}.active_week IS NULL OR ${p}.active_week @> floor(extract(epoch FROM
    (${ts} AT TIME ZONE ${p}.active_tz) - date_trunc('week', ${ts} AT TIME ZONE ${p}.active_tz)) / 60)::int)`;

/** Whether `loc` is within a geographic boundary `b` widened by `extra` meters. */
const within = (b: string, loc: string, extra: string) => `CASE ${b}.type
      WHEN 'radius' THEN ST_DWithin(${loc}::geography, ${b}.center, ${b}.radius + ${extra})
      WHEN 'polygon' THEN CASE WHEN ${extra} = 0 THEN ST_Covers(${b}.area, ${loc}) ELSE ST_DWithin(${b}.area::geography, ${loc}::geography, ${extra}) END
      ELSE ST_DWithin(${loc}::geography, ${b}.line, ${b}.width_m + ${extra}) END`;

/**
 * What a message (location `loc`, numbers `num`) says about boundary `b`: true inside, false outside, NULL nothing (it
 * lacks what the boundary reads, or it is in the boundary's hysteresis band). The parameter's slot is the boundary's
 * generated column (migration 035): a number, or null when the message did not carry it.
 */
const said = (b: string, loc: string, num: string) => `CASE WHEN ${b}.type = 'parametric' THEN
      CASE WHEN ${num}[${b}.slot] IS NULL THEN NULL
        WHEN ${num}[${b}.slot] >= coalesce(${b}.min, '-Infinity'::float8) AND ${num}[${b}.slot] <= coalesce(${b}.max, 'Infinity'::float8) THEN true
        WHEN ${b}.deadband IS NULL OR ${num}[${b}.slot] < coalesce(${b}.min, '-Infinity'::float8) - ${b}.deadband
          OR ${num}[${b}.slot] > coalesce(${b}.max, 'Infinity'::float8) + ${b}.deadband THEN false END
    WHEN ${loc} IS NULL THEN NULL
    WHEN ${within(b, loc, '0')} THEN true
    WHEN ${b}.buffer_m IS NULL OR NOT ${within(b, loc, `${b}.buffer_m`)} THEN false END`;

const PLAN = `
  SELECT p.rule_id, p.from_ts, p.late, p.floor, r.device_id, r.created_at, r.active_week, r.active_tz,
    coalesce(r.min_inside_s, 0) AS min_in, coalesce(r.min_outside_s, 0) AS min_out,
    (r.min_inside_s IS NOT NULL OR r.min_outside_s IS NOT NULL) AS dwell, r.detect_crossings AS crossings,
    CASE WHEN p.late THEN seed.states ELSE rs.states END AS seed,
    CASE WHEN p.late THEN seed.run_at ELSE rs.run_at END AS run_at,
    CASE WHEN p.late THEN seed.run_message ELSE rs.run_message END AS run_message,
    CASE WHEN p.late THEN seed.run_message_ts ELSE rs.run_message_ts END AS run_message_ts,
    CASE WHEN p.late THEN seed.held ELSE rs.held END AS held, rs.confirmed
  FROM unnest(?::uuid[], ?::timestamptz[], ?::boolean[], ?::timestamptz[]) AS p(rule_id, from_ts, late, floor)
  JOIN rules r ON r.id = p.rule_id
  LEFT JOIN rule_states rs ON rs.rule_id = p.rule_id
  -- A rule continuing live is seeded from rule_states, which holds its last logged states (written with every change
  -- point, and after every recomputation; a rule without its row starts unknown, as without a log); only a recomputed
  -- rule looks up the log before \`from\`. \`p.late\` is a
  -- one-time filter here, so a live rule skips the index scan.
  LEFT JOIN LATERAL (
    SELECT l.states, l.run_at, l.run_message, l.run_message_ts, l.held FROM rule_state_log l
    WHERE p.late AND l.rule_id = p.rule_id AND l.ts < p.from_ts
    ORDER BY l.ts DESC, l.message_id DESC, l.step DESC LIMIT 1
  ) seed ON true`;

/**
 * The plan, with what a rule with dwell or crossings needs more: whether its run in force had lasted its dwell before
 * \`from\` (live: rule_states says; recomputed: a message read that long after the run began and before \`from\`, or the
 * run's dwell ended before the recompute bound \`floor\`, past which nothing is read again), and \`lo\`, the earliest
 * time of the stored events a recomputation may imply (the run in force's event; a crossing just before \`from\`).
 */
const PLANNED = `
  SELECT q.*, CASE WHEN NOT q.dwell OR q.run_at IS NULL THEN false
      WHEN NOT q.late THEN q.confirmed
      WHEN q.run_at + make_interval(secs => q.need) < q.floor THEN true
      ELSE EXISTS (SELECT 1 FROM messages mm WHERE mm.device_id = q.device_id AND mm.ts >= q.run_at + make_interval(secs => q.need)
        AND mm.ts < q.from_ts AND mm.received_at >= q.created_at AND ${active('q', 'mm.ts')}) END AS confirmed_before,
    least(q.from_ts, CASE WHEN q.dwell THEN q.run_at END, CASE WHEN q.crossings THEN q.from_ts - interval '${MAX_CROSSING_GAP}' END) AS lo
  FROM (SELECT p0.*, CASE WHEN array_position(p0.seed, false) IS NULL THEN p0.min_in ELSE p0.min_out END AS need FROM plan0 p0) q`;

/** The same event: same rule, type, time, message and firstEval. */
const SAME_EVENT = (a: string, b: string) =>
  `${a}.rule_id = ${b}.rule_id AND ${a}.event_type = ${b}.event_type AND ${a}.ts = ${b}.ts AND ${a}.message_id = ${b}.message_id AND ${a}.first_eval = ${b}.first_eval`;

/** The order of a rule's change points: by time, message and step (a crossing's two points before its fix's own). */
const ORDER = (x: string) => `${x}.ts, ${x}.id NULLS FIRST, ${x}.step`;

/**
 * Parameters: rule ids, their `from` timestamps, late flags and recompute bounds, the three link templates
 * (rule-event.sql.ts), then the lease (ms) of the notifications handed to this process's worker (null: none, they wait
 * for a claim). Returns EVENTS_AND_LEASED: a row per event stored, then a row per notification leased.
 */
export const RULES_SQL = `
WITH plan0 AS MATERIALIZED (${PLAN}),
plan AS MATERIALIZED (${PLANNED}),
dwelling AS (SELECT p.rule_id FROM plan p WHERE p.dwell),
links AS (SELECT ?::text AS self_t, ?::text AS events_t, ?::text AS subs_t),
lease AS (SELECT ?::bigint AS ms),
-- the rules with more than one boundary: only theirs need the seed as rows and the grid below to know every boundary at
-- each change point
multi AS (SELECT b.rule_id FROM plan p JOIN rule_boundaries b ON b.rule_id = p.rule_id AND b.position = 2),
-- MATERIALIZED: inlined, the predicate ran twice per (message, boundary): in the join filter that \`changed\`'s
-- \`said IS NOT NULL\` became, and again in the output. \`loc\`: the fix, for the crossing rules' geographic boundary only
said_base AS MATERIALIZED (
  SELECT p.rule_id, m.id, m.ts, b.position, p.seed[b.position] AS seed,
    ${said('b', 'm.location', 'm.num')} AS said,
    CASE WHEN p.crossings AND b.type <> 'parametric' THEN m.location END AS loc
  FROM plan p
  -- per rule through messages_device_ts_id: OFFSET 0 keeps the planner from flattening the lateral into a hash join
  -- over a sequential scan of every stored message
  CROSS JOIN LATERAL (SELECT mm.id, mm.ts, mm.location, mm.num FROM messages mm WHERE mm.device_id = p.device_id
    AND mm.ts >= p.from_ts AND mm.received_at >= p.created_at AND ${active('p', 'mm.ts')} OFFSET 0) m
  JOIN rule_boundaries b ON b.rule_id = p.rule_id
  -- the seed as the first row of a boundary, for the grid's rules only: the others read it as lag's default (as rows,
  -- the seeds of all 800 rules of a live batch went through the sort and windows below, a third of their rows)
  UNION ALL
  SELECT p.rule_id, NULL::uuid, '-infinity'::timestamptz, b.position, p.seed[b.position], p.seed[b.position], NULL::geometry
  FROM plan p JOIN rule_boundaries b ON b.rule_id = p.rule_id WHERE p.rule_id IN (SELECT rule_id FROM multi)
),
-- crossings: the crossing rules' fixes in order, with the last one before \`from\` (the segment into the window)
fixes AS (
  SELECT p.rule_id, b.position, pf.id, pf.ts, pf.location AS loc, ${said('b', 'pf.location', '(NULL::float8[])')} AS said
  FROM plan p JOIN rule_boundaries b ON b.rule_id = p.rule_id AND b.type <> 'parametric'
  CROSS JOIN LATERAL (SELECT mm.id, mm.ts, mm.location FROM messages mm WHERE mm.device_id = p.device_id AND mm.ts < p.from_ts
    AND mm.ts >= p.from_ts - interval '${MAX_CROSSING_GAP}' AND mm.location IS NOT NULL AND mm.received_at >= p.created_at
    AND ${active('p', 'mm.ts')} ORDER BY mm.ts DESC, mm.id DESC LIMIT 1) pf
  WHERE p.crossings
  UNION ALL
  -- the window's fixes: \`said_base\` is read only when the batch has a crossing rule (a one-time filter)
  SELECT s.rule_id, s.position, s.id, s.ts, s.loc, s.said FROM said_base s
  WHERE (SELECT bool_or(p.crossings) FROM plan p) AND s.loc IS NOT NULL
),
segments AS (
  SELECT f.rule_id, f.position, f.id, f.ts, lag(f.ts) OVER w AS prev_ts, lag(f.loc) OVER w AS prev_loc, f.loc,
    f.said, lag(f.said) OVER w AS prev_said
  FROM fixes f WINDOW w AS (PARTITION BY f.rule_id ORDER BY f.ts, f.id)
),
-- both fixes outside (past any buffer) and the segment through the fence, measured as the boundary measures
-- (the segment made only for the pairs of fixes both outside)
crossed AS (
  SELECT s.rule_id, s.position, s.id, s.ts, s.prev_ts, s.seg, b.fence
  FROM (SELECT s.*, ST_MakeLine(s.prev_loc, s.loc) AS seg FROM segments s
    WHERE NOT s.said AND NOT s.prev_said AND s.ts - s.prev_ts BETWEEN interval '3 milliseconds' AND interval '${MAX_CROSSING_GAP}'
    OFFSET 0) s
  JOIN rule_boundaries b ON b.rule_id = s.rule_id AND b.position = s.position
  -- first the boxes (the fence's, widened by ~11 m for the polygon's straight edges): most segments are nowhere near
  WHERE (b.fence IS NULL OR s.seg && ST_Expand(b.fence, 0.0001)) AND CASE b.type WHEN 'radius' THEN ST_DWithin(s.seg::geography, b.center, b.radius)
      WHEN 'polygon' THEN ST_Intersects(b.area, s.seg) ELSE ST_DWithin(s.seg::geography, b.line, b.width_m) END
),
-- where along the segment it enters and leaves the fence's polygon (its first and last point in it), as times between
-- the fixes to the millisecond, strictly between them and in order
crossing AS (
  SELECT c.rule_id, c.position, c.id, c.ts, x.at_in,
    greatest(x.at_in + interval '1 millisecond', least(c.ts - interval '1 millisecond',
      date_trunc('milliseconds', c.prev_ts + (c.ts - c.prev_ts) * coalesce(f.f_out, f.f_in, 0.5)))) AS at_out
  FROM crossed c
  CROSS JOIN LATERAL (SELECT min(ST_LineLocatePoint(c.seg, d.geom)) AS f_in, max(ST_LineLocatePoint(c.seg, d.geom)) AS f_out
    FROM ST_DumpPoints(ST_Intersection(c.fence, c.seg)) d) f
  CROSS JOIN LATERAL (SELECT greatest(c.prev_ts + interval '1 millisecond', least(c.ts - interval '2 milliseconds',
    date_trunc('milliseconds', c.prev_ts + (c.ts - c.prev_ts) * coalesce(f.f_in, 0.5)))) AS at_in) x
),
said AS (
  -- a message's own answer: step 0, at its time
  SELECT s.rule_id, s.id, s.ts, 0::smallint AS step, s.ts AS at, s.position, s.seed, s.said FROM said_base s
  UNION ALL
  SELECT c.rule_id, c.id, c.ts, v.step, v.at, c.position, p.seed[c.position], v.said
  FROM crossing c JOIN plan p ON p.rule_id = c.rule_id
  CROSS JOIN LATERAL (VALUES (-2::smallint, c.at_in, true), (-1::smallint, c.at_out, false)) v(step, at, said)
),
changed AS (
  SELECT s.*, s.id IS NULL OR s.said IS DISTINCT FROM lag(s.said, 1, s.seed) OVER w AS changed,
    lag(s.said, 1, s.seed) OVER w AS said_before
  FROM said s WHERE s.said IS NOT NULL OR s.id IS NULL
  WINDOW w AS (PARTITION BY s.rule_id, s.position ORDER BY ${ORDER('s')})
),
change AS (SELECT c.rule_id, c.id, c.ts, c.step, c.at, c.position, c.said FROM changed c WHERE c.changed),
-- only rules with a change point past their seed go on: the rest (most rules of a live batch) can have no transition and
-- no log row (a recomputed one goes back to its seed in new_state), and carrying their seed through the grid and its
-- windows was a large share of the statement
points AS (
  SELECT DISTINCT c.rule_id, c.id, c.ts, c.step, c.at FROM change c WHERE c.rule_id IN (SELECT x.rule_id FROM change x WHERE x.id IS NOT NULL)
    AND c.rule_id IN (SELECT rule_id FROM multi)
),
grid AS (
  SELECT pt.rule_id, pt.id, pt.ts, pt.step, pt.at, b.position, c.said
  FROM points pt JOIN rule_boundaries b ON b.rule_id = pt.rule_id
  LEFT JOIN change c ON c.rule_id = pt.rule_id AND c.position = b.position AND c.ts = pt.ts AND c.id IS NOT DISTINCT FROM pt.id
    AND c.step = pt.step
),
grouped AS (
  SELECT g.*, count(g.said) OVER (PARTITION BY g.rule_id, g.position ORDER BY ${ORDER('g')}) AS grp FROM grid g
),
carried AS (
  SELECT g.rule_id, g.id, g.ts, g.step, g.at, g.position,
    first_value(g.said) OVER (PARTITION BY g.rule_id, g.position, g.grp ORDER BY ${ORDER('g')}) AS known
  FROM grouped g
),
per_point AS (
  SELECT c.rule_id, c.id, c.ts, c.step, c.at, array_agg(c.known ORDER BY c.position) AS states,
    bool_and(c.known IS NOT NULL) AS evaluated,
    bool_and(c.known IS NOT NULL) AND coalesce(bool_and(c.known), false) AS covered
  FROM carried c GROUP BY c.rule_id, c.id, c.ts, c.step, c.at
),
compared AS (
  SELECT pp.*, lag(pp.evaluated) OVER w AS prev_evaluated, lag(pp.covered) OVER w AS prev_covered
  FROM per_point pp WINDOW w AS (PARTITION BY pp.rule_id ORDER BY ${ORDER('pp')})
),
-- the change points: rule_state_log rows; a transition is one where the rule became evaluated or its coverage flipped.
-- A rule of one boundary needs no grid: its change points are its boundary's (each one known, its state the answer), and
-- each is a transition (the answer differs from the one before it: the rule was unknown, or its coverage flips); the
-- grid's windows and sorts would be work for nothing for those rules
changes AS MATERIALIZED (
  SELECT c.rule_id, c.id AS message_id, c.ts, c.step, c.at, c.states, c.covered,
    c.evaluated AND (NOT c.prev_evaluated OR c.covered <> c.prev_covered) AS transition,
    NOT c.prev_evaluated AS first_eval
  FROM compared c WHERE c.id IS NOT NULL
  UNION ALL
  SELECT c.rule_id, c.id, c.ts, c.step, c.at, ARRAY[c.said], c.said, true, c.said_before IS NULL
  FROM changed c WHERE c.changed AND c.id IS NOT NULL AND c.rule_id NOT IN (SELECT rule_id FROM multi)
),
-- dwell: the runs of the rules with dwell (the one in force before \`from\`, then one a transition), each with whether it
-- counts (it had before \`from\`; the next run began its dwell later or more; or the latest message read, \`clock\`, is
-- that much later), what the rule reports after it (\`d_after\`: the last run that counts, else what it held before)
-- and before it (\`held\`)
clock AS (
  SELECT p.rule_id, c.ts FROM plan p
  CROSS JOIN LATERAL (SELECT max(mm.ts) AS ts FROM messages mm WHERE mm.device_id = p.device_id AND mm.ts >= p.from_ts
    AND mm.received_at >= p.created_at AND ${active('p', 'mm.ts')}) c
  WHERE p.dwell
),
runs AS (
  SELECT p.rule_id, 0 AS ord, p.run_at AS at, p.run_message AS message_id, p.run_message_ts AS ts, 0::smallint AS step,
    array_position(p.seed, false) IS NULL AS covered, p.confirmed_before AS before
  FROM plan p WHERE p.dwell AND p.run_at IS NOT NULL
  UNION ALL
  SELECT c.rule_id, 1, c.at, c.message_id, c.ts, c.step, c.covered, false
  FROM changes c WHERE c.transition AND c.rule_id IN (SELECT rule_id FROM dwelling)
),
timed AS (
  SELECT r.*, p.late, p.held AS seed_held, CASE WHEN r.covered THEN p.min_in ELSE p.min_out END AS need,
    r.before OR coalesce(coalesce(lead(r.at) OVER w, ck.ts) - r.at
      >= make_interval(secs => CASE WHEN r.covered THEN p.min_in ELSE p.min_out END), false) AS qualifies,
    row_number() OVER w AS n
  FROM runs r JOIN plan p ON p.rule_id = r.rule_id LEFT JOIN clock ck ON ck.rule_id = r.rule_id
  WINDOW w AS (PARTITION BY r.rule_id ORDER BY r.ord, r.ts, r.message_id, r.step)
),
reported AS (
  SELECT g.*, CASE WHEN g.grp = 0 THEN g.seed_held ELSE first_value(g.covered) OVER (PARTITION BY g.rule_id, g.grp ORDER BY g.n) END AS d_after
  FROM (SELECT t.*, count(*) FILTER (WHERE t.qualifies) OVER (PARTITION BY t.rule_id ORDER BY t.n) AS grp FROM timed t) g
),
held_runs AS (
  SELECT d.*, lag(d.d_after, 1, d.seed_held) OVER (PARTITION BY d.rule_id ORDER BY d.n) AS held FROM reported d
),
-- each change point of a rule with dwell, with its run in force (the k-th transition's, or before any the seed's)
dwell_points AS (
  SELECT c.rule_id, c.ts, c.message_id, c.step, h.at AS run_at, h.message_id AS run_message, h.ts AS run_message_ts, h.held
  FROM (SELECT c.*, count(*) FILTER (WHERE c.transition) OVER (PARTITION BY c.rule_id ORDER BY c.ts, c.message_id, c.step) AS k
    FROM changes c WHERE c.rule_id IN (SELECT rule_id FROM dwelling)) c
  JOIN plan p ON p.rule_id = c.rule_id
  LEFT JOIN held_runs h ON h.rule_id = c.rule_id AND h.n = c.k + (p.run_at IS NOT NULL)::int
),
-- the new state of each rule that has one: the last change point's; a recomputed rule without change points from
-- \`from\` on is back to the state in force before it (the seed, else unknown). A rule with dwell reports its last run's
-- \`d_after\`, and has a new state too when its run in force came to count
last_change AS (
  SELECT DISTINCT ON (c.rule_id) c.rule_id, c.states FROM changes c ORDER BY c.rule_id, c.ts DESC, c.message_id DESC, c.step DESC
),
last_run AS (SELECT DISTINCT ON (h.rule_id) h.* FROM held_runs h ORDER BY h.rule_id, h.n DESC),
new_state AS (
  SELECT x.rule_id, x.states,
    CASE WHEN x.dwell THEN lr.d_after IS NOT NULL ELSE x.known END AS evaluated,
    CASE WHEN x.dwell THEN coalesce(lr.d_after, false) ELSE x.known AND array_position(x.states, false) IS NULL END AS covered,
    lr.at AS run_at, lr.message_id AS run_message, lr.ts AS run_message_ts, lr.held, coalesce(lr.qualifies, false) AS confirmed
  FROM (
    SELECT y.*, cardinality(y.states) = y.boundaries AND array_position(y.states, NULL) IS NULL AS known
    FROM (
      SELECT p.rule_id, p.dwell, n.boundaries, coalesce(lc.states, p.seed, array_fill(NULL::boolean, ARRAY[n.boundaries])) AS states
      FROM plan p LEFT JOIN last_change lc ON lc.rule_id = p.rule_id
      -- counted for these rules only (in plan, for every rule of the batch: 800 index scans where ~200 rules change)
      CROSS JOIN LATERAL (SELECT count(*)::int AS boundaries FROM rule_boundaries b WHERE b.rule_id = p.rule_id) n
      WHERE lc.rule_id IS NOT NULL OR p.late
        OR (p.dwell AND p.rule_id IN (SELECT h.rule_id FROM held_runs h WHERE h.ord = 0 AND h.qualifies AND NOT h.before))
      -- OFFSET 0: computed once per rule (flattened, each use of \`states\` would repeat the coalesce)
      OFFSET 0) y
    OFFSET 0) x
  LEFT JOIN last_run lr ON lr.rule_id = x.rule_id
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
    AND NOT EXISTS (SELECT 1 FROM changes c WHERE c.rule_id = l.rule_id AND c.ts = l.ts AND c.message_id = l.message_id AND c.step = l.step)
  RETURNING 1
),
logged AS (
  INSERT INTO rule_state_log (rule_id, ts, message_id, step, states, run_at, run_message, run_message_ts, held)
  SELECT c.rule_id, c.ts, c.message_id, c.step, c.states, d.run_at, d.run_message, d.run_message_ts, d.held
  FROM changes c LEFT JOIN dwell_points d ON d.rule_id = c.rule_id AND d.ts = c.ts AND d.message_id = c.message_id AND d.step = c.step
  WHERE c.rule_id IN (SELECT id FROM locked)
  ON CONFLICT (rule_id, ts, message_id, step) DO UPDATE SET states = excluded.states, run_at = excluded.run_at,
    run_message = excluded.run_message, run_message_ts = excluded.run_message_ts, held = excluded.held
  RETURNING 1
),
set_state AS (
  UPDATE rule_states s SET evaluated = c.evaluated, covered = c.covered, states = c.states, run_at = c.run_at,
    run_message = c.run_message, run_message_ts = c.run_message_ts, held = c.held, confirmed = c.confirmed, updated_at = now()
  FROM new_state c WHERE s.rule_id = c.rule_id AND c.rule_id IN (SELECT id FROM locked)
  RETURNING 1
),
-- what the rules report: a rule without dwell every transition, one with dwell each run that counts and changes what it
-- reported (a run in force before \`from\` only when it came to count now, or, recomputed, to be checked against the
-- events stored). \`ts\`: the event's time (a crossing's interpolated one); \`message_ts\`: its message's
transitions AS (
  SELECT c.rule_id, c.message_id, c.ts AS message_ts, c.at AS ts, c.covered, c.first_eval, NULL::float8 AS dwell_s,
    CASE WHEN c.covered THEN 'rule-enter' ELSE 'rule-leave' END AS event_type
  FROM changes c WHERE c.transition AND c.rule_id NOT IN (SELECT rule_id FROM dwelling) AND c.rule_id IN (SELECT id FROM locked)
  UNION ALL
  SELECT h.rule_id, h.message_id, h.ts, h.at, h.covered, h.held IS NULL, nullif(h.need, 0),
    CASE WHEN h.covered THEN 'rule-enter' ELSE 'rule-leave' END
  FROM held_runs h WHERE h.qualifies AND h.covered IS DISTINCT FROM h.held AND (h.late OR NOT h.before)
    AND h.rule_id IN (SELECT id FROM locked)
),
-- a recomputed rule's stored events it can imply: those of messages from \`from\` on, and its run in force's (by its time
-- and message: a crossing's enter and leave have the same message)
stored AS (
  SELECT e.id, e.object_id AS rule_id, e.event_type, e.ts, (e.meta -> 'message' ->> 'id')::uuid AS message_id,
    coalesce((e.meta ->> 'firstEval')::boolean, false) AS first_eval
  FROM plan p JOIN events e ON e.object_type = 'rule' AND e.object_id = p.rule_id AND e.ts >= p.lo
  WHERE p.late AND p.rule_id IN (SELECT id FROM locked)
    AND ((e.meta #>> '{message,timestamp}')::timestamptz >= p.from_ts OR (p.dwell AND e.ts = p.run_at AND (e.meta -> 'message' ->> 'id')::uuid = p.run_message))
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
    date_trunc('milliseconds', statement_timestamp()), t.event_type, 'rule', r.id, ${ruleEventMeta('base.meta')}
  FROM transitions t
  -- the rule by its key: joined to plan (two CTEs, their rows estimated at a few), the join became a nested loop
  -- comparing every transition with every planned rule
  JOIN rules r ON r.id = t.rule_id
  JOIN messages m ON m.device_id = r.device_id AND m.ts = t.message_ts AND m.id = t.message_id
  CROSS JOIN links
  -- OFFSET 0: built once (flattened, each use of the meta below would build it again)
  CROSS JOIN LATERAL (SELECT ${RULE_EVENT_META} AS meta OFFSET 0) base
  -- a crossing's event: the fix before it (the segment's start), found as the statement found it
  LEFT JOIN LATERAL (SELECT mm.id, mm.ts FROM messages mm WHERE t.ts < t.message_ts AND mm.device_id = r.device_id
    AND mm.ts < t.message_ts AND mm.ts >= t.message_ts - interval '${MAX_CROSSING_GAP}' AND mm.location IS NOT NULL
    AND mm.received_at >= r.created_at AND ${active('r', 'mm.ts')} ORDER BY mm.ts DESC, mm.id DESC LIMIT 1) pf ON true
  WHERE NOT EXISTS (SELECT 1 FROM stored s WHERE ${SAME_EVENT('s', 't')})
  RETURNING ${EVENT_COLUMNS.join(', ')}
),
${NOTIFIED('ev')}
${EVENTS_AND_LEASED('all')}`;

/**
 * A rule to evaluate from `from` on; `late`: its stored state and events from `from` on are recomputed, and `floor` is
 * the recompute bound (db/rules/evaluate.ts): nothing older is read again.
 */
export interface PlanEntry { ruleId: string; from: Date; late: boolean; floor?: Date | null }

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
    boolArray(plan.map((p) => p.late)), timestampArray(plan.map((p) => p.floor ?? null)), ...links, leaseMs]);
  // rule events: each belongs to its rule's application, and its object is the rule
  const { events, leased } = eventsAndLeased<EventRow & { application_id: string; object_id: string }>(rows);
  return [...events.values()].map((r) => ({
    id: r.id, deviceId: r.device_id, eventType: r.event_type, applicationId: r.application_id, timestamp: new Date(r.ts),
    objectId: r.object_id, ...(leaseMs === null ? {} : { leased: leased.get(r.id) ?? [] }),
  }));
}
