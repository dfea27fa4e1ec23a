import type { Knex } from 'knex';
import { runStatements } from '../sql.js';
import { BOUNDARIES_OF } from '../rules/rule-event.sql.js';

/**
 * Rule options (docs/concepts/rules-events-webhooks.md, "Rule options"):
 * - `rules`: the dwell before an enter or a leave counts (`min_inside_s`, `min_outside_s`), whether segments between
 *   fixes are tested against the fence (`detect_crossings`), and the schedule: `active_hours` as given, evaluated as
 *   `active_week`, the minutes of the week (Monday 00:00 = 0) in which the rule reads messages, local to `active_tz`.
 *   `options` is the presented copy of the options set, merged into the rule copy rule events carry.
 * - `rule_boundaries`: `deadband` (parametric) and `buffer_m` (geographic) widen the boundary a device must pass to
 *   count as outside again; the `corridor` type is a line (`line`, geography) and `width_m`; `fence` is every
 *   geographic boundary's inner area as a polygon, where a crossing between two fixes enters and leaves it.
 * - `rule_state_log` and `rule_states`: the coverage run in force (its event time `run_at`, the message that began it,
 *   and `held`, what the rule had last reported before it) and, in `rule_states`, whether the run has lasted its
 *   dwell (`confirmed`); a crossing's two change points sit at the fix after it, ordered by `step` before the fix's
 *   own (0). Like the log's other columns (migration 023) they get a small ANALYZE sample, or none where no
 *   query filters on them.
 * - rules stored without their boundaries' copy (migration 029 added the column) get it, built as a rule copy presents
 *   boundaries now.
 */
export async function up(knex: Knex): Promise<void> {
  // A fence's polygon: the area within \`meters\` of a shape, as ST_Buffer builds it on geography (in a projection
  // chosen for the shape), or null where no projection holds it (a radius of half the Earth): a crossing's times are
  // then taken at the segment's middle.
  await knex.raw(`CREATE OR REPLACE FUNCTION rule_fence(shape geography, meters double precision) RETURNS geometry
    LANGUAGE plpgsql IMMUTABLE AS $$
    BEGIN
      RETURN ST_Buffer(shape, meters)::geometry;
    EXCEPTION WHEN OTHERS THEN
      RETURN NULL;
    END $$`);
  await runStatements(knex, `
    ALTER TABLE rules ADD COLUMN min_inside_s double precision, ADD COLUMN min_outside_s double precision,
      ADD COLUMN detect_crossings boolean NOT NULL DEFAULT false, ADD COLUMN active_hours jsonb,
      ADD COLUMN active_tz text, ADD COLUMN active_week int4multirange, ADD COLUMN options jsonb;
    ALTER TABLE rule_boundaries DROP CONSTRAINT IF EXISTS rule_boundaries_type_check;
    ALTER TABLE rule_boundaries ADD CONSTRAINT rule_boundaries_type_check CHECK (type IN ('parametric', 'radius', 'polygon', 'corridor'));
    ALTER TABLE rule_boundaries ADD COLUMN deadband double precision, ADD COLUMN buffer_m double precision,
      ADD COLUMN width_m double precision, ADD COLUMN line geography(LineString, 4326), ADD COLUMN fence geometry(Geometry, 4326);
    UPDATE rule_boundaries SET fence = CASE type WHEN 'radius' THEN rule_fence(center, radius) WHEN 'polygon' THEN area END
      WHERE type IN ('radius', 'polygon');
    ALTER TABLE rule_state_log ADD COLUMN step smallint NOT NULL DEFAULT 0, ADD COLUMN run_at timestamptz,
      ADD COLUMN run_message uuid, ADD COLUMN run_message_ts timestamptz, ADD COLUMN held boolean;
    ALTER TABLE rule_state_log DROP CONSTRAINT rule_state_log_pkey;
    ALTER TABLE rule_state_log ADD PRIMARY KEY (rule_id, ts, message_id, step);
    ALTER TABLE rule_state_log ALTER COLUMN step SET STATISTICS 10, ALTER COLUMN run_at SET STATISTICS 0,
      ALTER COLUMN run_message SET STATISTICS 0, ALTER COLUMN run_message_ts SET STATISTICS 0, ALTER COLUMN held SET STATISTICS 0;
    ALTER TABLE rule_states ADD COLUMN run_at timestamptz, ADD COLUMN run_message uuid, ADD COLUMN run_message_ts timestamptz,
      ADD COLUMN held boolean, ADD COLUMN confirmed boolean NOT NULL DEFAULT false
  `);
  await copyBoundaries(knex);
}

/** Stores the boundaries' copy of every rule without one. */
export async function copyBoundaries(knex: Knex): Promise<void> {
  await knex.raw(`UPDATE rules r SET boundaries = ${BOUNDARIES_OF('r.id')} WHERE r.boundaries IS NULL`);
}

export async function down(knex: Knex): Promise<void> {
  await runStatements(knex, `
    ALTER TABLE rule_states DROP COLUMN run_at, DROP COLUMN run_message, DROP COLUMN run_message_ts, DROP COLUMN held, DROP COLUMN confirmed;
    DELETE FROM rule_state_log WHERE step <> 0;
    ALTER TABLE rule_state_log DROP CONSTRAINT rule_state_log_pkey;
    ALTER TABLE rule_state_log ADD PRIMARY KEY (rule_id, ts, message_id);
    ALTER TABLE rule_state_log DROP COLUMN step, DROP COLUMN run_at, DROP COLUMN run_message, DROP COLUMN run_message_ts, DROP COLUMN held;
    DELETE FROM rules WHERE id IN (SELECT rule_id FROM rule_boundaries WHERE type = 'corridor');
    ALTER TABLE rule_boundaries DROP COLUMN deadband, DROP COLUMN buffer_m, DROP COLUMN width_m, DROP COLUMN line, DROP COLUMN fence;
    ALTER TABLE rule_boundaries DROP CONSTRAINT IF EXISTS rule_boundaries_type_check;
    ALTER TABLE rule_boundaries ADD CONSTRAINT rule_boundaries_type_check CHECK (type IN ('parametric', 'radius', 'polygon'));
    ALTER TABLE rules DROP COLUMN min_inside_s, DROP COLUMN min_outside_s, DROP COLUMN detect_crossings, DROP COLUMN active_hours,
      DROP COLUMN active_tz, DROP COLUMN active_week, DROP COLUMN options
  `);
  await knex.raw('DROP FUNCTION IF EXISTS rule_fence(geography, double precision)');
}
