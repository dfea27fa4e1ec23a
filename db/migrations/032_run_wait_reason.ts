import type { Knex } from 'knex';
import { runStatements } from '../sql.js';

/**
 * Why a run waits before its next pass (`next_pass_at`), in words for `runs status` and the console; null when it
 * does not wait. A dummy's device gets an index on `dummies.device_id`: the gateway asks at each CONNECT whether the
 * device is a dummy's (its frames may be stamped ahead; docs/concepts/simulator.md (Time)).
 */
export async function up(knex: Knex): Promise<void> {
  await runStatements(knex, `
    ALTER TABLE runs ADD COLUMN IF NOT EXISTS wait_reason text;
    CREATE INDEX IF NOT EXISTS dummies_device ON dummies (device_id);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await runStatements(knex, `
    DROP INDEX IF EXISTS dummies_device;
    ALTER TABLE runs DROP COLUMN IF EXISTS wait_reason;
  `);
}
