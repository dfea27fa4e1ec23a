import type { Knex } from 'knex';
import { createPartitions } from '../../db/partitions.js';
import { TIME_TABLES } from '../../db/retention/time-tables.js';

/**
 * Makes the partitions of `table` (db/retention/time-tables.ts) covering [from, to], for a test that stores rows of
 * its own times with SQL, as the platform's writers do before they store (db/partitions.ts ensurePartitions).
 */
export async function partitionsFor(knex: Knex, table: string, from: Date | string | number, to: Date | string | number = from): Promise<void> {
  const spec = TIME_TABLES.find((s) => s.table === table);
  if (!spec) throw new Error(`${table} is not partitioned by time`);
  await createPartitions(knex, spec, new Date(from), new Date(to));
}

/** Whether a plan node's relation is `table` or one of its time partitions (`messages_p20240701`). */
export const isTable = (relation: string | undefined, table: string): boolean =>
  relation === table || (relation?.startsWith(`${table}_p`) === true && /^\d+$/.test(relation.slice(table.length + 2)));
