import { createHash } from 'node:crypto';
import { parse, protocol, type PGlite, type Results } from '@electric-sql/pglite';

type BackendMessage = Parameters<typeof parse.parseResults>[0][number];
type Parsers = Parameters<typeof parse.parseResults>[1];
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

/** The rows a prepared statement answers (PostgreSQL's pg result and PGlite's Results both carry them). */
export interface PreparedResult { rows: any[] }

/** A statement parsed on one PGlite instance: its name and the parameter types PostgreSQL inferred. */
interface PgliteStatement { name: string; types: number[] }

/** PGlite internals this module drives: the protocol step PGlite's own query() uses, and its type maps. */
interface PgliteProtocol {
  execProtocolStream(message: Uint8Array, o: { syncToFs: boolean }): Promise<BackendMessage[]>;
  serializers: Record<number, (v: unknown) => string>;
  parsers: Parsers;
}

const parsedOn = new WeakMap<PGlite, Map<string, PgliteStatement>>();

/**
 * PGlite's query() parses and plans its statement anew each time (the unnamed statement). For the big
 * set-based statements of the ingest path the planner cost as much as the execution (3-10 ms of a 20 ms
 * trips statement), batch after batch. This runs them as named statements over the extended protocol,
 * the way PostgreSQL's driver does: parsed once per PGlite instance, the plan reused after a few runs.
 * The steps run under PGlite's query lock, so no other query interleaves with them.
 */
async function onPglite(trx: Knex, sql: string, bindings: readonly Knex.RawBinding[]): Promise<PreparedResult> {
  const pg = (trx.client.config.connection as { pglite: PGlite }).pglite;
  const p = pg as unknown as PgliteProtocol;
  const { serialize } = protocol;
  let statements = parsedOn.get(pg);
  if (!statements) parsedOn.set(pg, (statements = new Map()));
  const step = (message: Uint8Array) => p.execProtocolStream(message, { syncToFs: false });
  const run = () => pg.runExclusive(async () => {
    const messages: BackendMessage[] = [];
    try {
      let st = statements.get(sql);
      if (!st) {
        const name = nameOf(sql);
        const text = (trx.client as unknown as { positionBindings(s: string): string }).positionBindings(sql);
        await step(serialize.parse({ name, text, types: [] }));
        st = { name, types: parse.parseDescribeStatementResults(await step(serialize.describe({ type: 'S', name }))) };
        statements.set(sql, st);
      }
      const types = st.types;
      const values = bindings.map((b, i) => (b === null || b === undefined ? null : (p.serializers[types[i]] ?? String)(b)));
      messages.push(
        ...await step(serialize.bind({ statement: st.name, values })),
        ...await step(serialize.describe({ type: 'P' })),
        ...await step(serialize.execute({})),
      );
    } finally {
      messages.push(...await step(serialize.sync()));
    }
    return parse.parseResults(messages, p.parsers)[0] as Results;
  });
  // Outside a transaction the statement needs the pool's connection like any knex query: inside one, the
  // transaction holds it and this runs in its flow.
  if ((trx as Knex.Transaction).isTransaction) return run();
  const conn = await trx.client.acquireConnection();
  try { return await run(); } finally { await trx.client.releaseConnection(conn); }
}

/**
 * Runs one of the ingest path's constant statements as a named prepared statement: each PostgreSQL
 * connection (or the PGlite instance) parses it once and, after a few executions, reuses its plan. The big
 * set-based statements (trips, distance, rules) spend as long in the planner as in execution, batch after
 * batch. Fires knex's `query` event like any statement, so statement counts still see it.
 */
export async function prepared(trx: Knex, sql: string, bindings: readonly Knex.RawBinding[]): Promise<PreparedResult> {
  if (trx.client.config.client === 'pg') return trx.raw(sql, bindings as Knex.RawBinding[]).options({ name: nameOf(sql) });
  trx.client.emit('query', { sql, bindings, method: 'raw', __knexTxId: (trx as { txid?: string }).txid });
  return onPglite(trx, sql, bindings);
}
