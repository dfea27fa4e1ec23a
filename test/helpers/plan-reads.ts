import { expect } from 'vitest';
import type { Knex } from 'knex';
import { fuse, type SqlPart } from '../../db/fused.js';
import { plainBinding } from '../../db/binary-array.js';
import { isTable } from './partitions.js';

/**
 * A statement's generic plan (what a prepared statement runs), executed with the part's bindings: its reads of messages
 * (each node's rows returned and dropped by its filter, per loop, and its loops). With `grow`, the plan is made and run
 * once first, then `grow` changes the tables (the cached plan stays), then the plan runs again and is read: what a
 * connection's first batch on a new database plans and its later batches keep running.
 */
export async function messageReads(trx: Knex, part: SqlPart, grow?: (trx: Knex) => Promise<void>) {
  const { sql } = fuse([part]);
  // every placeholder of these statements is cast to its type, in binding order
  const types = [...sql.matchAll(/\?::([a-z0-9_]+(?:\[\])?)/g)].map((m) => m[1]);
  expect(types).toHaveLength(part.bindings.length);
  let k = 0;
  const text = sql.replace(/\?/g, () => `$${++k}`);
  const quote = (v: unknown) => `'${String(v instanceof Date ? v.toISOString() : v).replace(/'/g, "''")}'`;
  const literal = (value: unknown, type: string) => (Array.isArray(value)
    ? `ARRAY[${value.map((v) => (v === null ? 'NULL' : quote(v))).join(',')}]::${type}` : `${quote(value)}::${type}`);
  await trx.raw(`PREPARE probe(${types.join(',')}) AS ${text}`);
  await trx.raw('SET LOCAL plan_cache_mode = force_generic_plan');
  const args = part.bindings.map((value, i) => literal(plainBinding(value), types[i]));
  if (grow) {
    await trx.raw('SAVEPOINT probe_first');
    await trx.raw(`EXECUTE probe(${args.join(',')})`);
    await trx.raw('ROLLBACK TO SAVEPOINT probe_first');
    await grow(trx);
  }
  const { rows } = await trx.raw(`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE probe(${args.join(',')})`);
  await trx.raw('DEALLOCATE probe');
  const out = rows[0]['QUERY PLAN'];
  const plan = (typeof out === 'string' ? JSON.parse(out) : out)[0].Plan;
  const reads: { node: string; rows: number; loops: number }[] = [];
  const walk = (n: any) => {
    if (isTable(n['Relation Name'], 'messages') && n['Node Type'] !== 'ModifyTable') {
      reads.push({ node: n['Node Type'], rows: n['Actual Rows'] + (n['Rows Removed by Filter'] ?? 0), loops: n['Actual Loops'] });
    }
    for (const c of n.Plans ?? []) walk(c);
  };
  walk(plan);
  return reads;
}
