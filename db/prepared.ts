import { createHash } from 'node:crypto';
import type { Knex } from 'knex';

const names = new Map<string, string>();

/** A stable statement name for a SQL text: the same text gets the same name in every process. */
function nameOf(sql: string): string {
  let name = names.get(sql);
  if (!name) {
    name = `dw_${createHash('sha1').update(sql).digest('hex').slice(0, 24)}`;
    names.set(sql, name);
  }
  return name;
}

/**
 * Runs one of the ingest path's constant statements as a named prepared statement on PostgreSQL: each
 * connection parses it once and, after a few executions, reuses its plan. The big set-based statements
 * (trips, distance, rules) spend as long in the planner as in execution, batch after batch. On PGlite
 * (one embedded connection) it is a plain raw statement. Goes through knex, so query events still fire.
 */
export function prepared(trx: Knex, sql: string, bindings: readonly Knex.RawBinding[]): Knex.Raw {
  const query = trx.raw(sql, bindings as Knex.RawBinding[]);
  return trx.client.config.client === 'pg' ? query.options({ name: nameOf(sql) }) : query;
}
