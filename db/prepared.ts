import { createHash } from 'node:crypto';
import { parse, protocol, type PGlite, type Results } from '@electric-sql/pglite';
import type { Knex } from 'knex';
import { ArrayParam } from './binary-array.js';

type BackendMessage = Parameters<typeof parse.parseResults>[0][number];
type Parsers = Parameters<typeof parse.parseResults>[1];

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

/** A statement parsed on one PGlite instance: its name and the parameter types PostgreSQL inferred. */
interface PgliteStatement { name: string; types: number[] }

/** PGlite internals this module drives: the protocol step PGlite's own query() uses, and its type maps. */
interface PgliteProtocol {
  execProtocolStream(message: Uint8Array, o: { syncToFs: boolean }): Promise<BackendMessage[]>;
  serializers: Record<number, (v: unknown) => string>;
  parsers: Parsers;
}

const parsedOn = new WeakMap<PGlite, Map<string, PgliteStatement>>();

const JSONB = 3802;
/** text, varchar, json and jsonb: their binary form is their UTF-8 text (jsonb's after its version byte, 1). */
const TEXT_LIKE = new Set([25, 1043, 114, JSONB]);
/**
 * Strings shorter than this stay text: the character loop is short for them, and each would cost a Buffer of its own
 * (the gain is in the batch's long JSON texts).
 */
const BYTES_FROM = 256;

/**
 * A parameter as PGlite's bind takes it (runOnPglite); a Uint8Array goes in binary format, anything else as text. Bytes
 * and an array parameter go in binary, as the pg driver sends them (db/binary-array.ts: array_recv copies its elements
 * where array_in parsed each one's text), and so does a long string of a text-like type (its UTF-8 bytes: PGlite's
 * writer measured a string's UTF-8 length one character at a time in JavaScript, and the batch's rows as one JSON text
 * run to hundreds of kilobytes): the bind's serialization was a sizeable share of the embedded platform's work at
 * ingest.
 */
export function pgliteValue(p: Pick<PgliteProtocol, 'serializers'>, b: unknown, type: number): string | Uint8Array | null {
  if (b === null || b === undefined) return null;
  if (b instanceof ArrayParam) return b.toPostgres();
  // bytes go as they are, in binary, as the pg driver sends a Buffer (PGlite's bytea serializer wrote them out as hex
  // text, a character at a time, and the webhook bodies recorded with their attempts are long)
  if (b instanceof Uint8Array) return b;
  if (typeof b === 'string' && b.length >= BYTES_FROM && TEXT_LIKE.has(type)) {
    if (type !== JSONB) return Buffer.from(b, 'utf8');
    const bytes = Buffer.allocUnsafe(1 + Buffer.byteLength(b, 'utf8'));
    bytes[0] = 1;
    bytes.write(b, 1, 'utf8');
    return bytes;
  }
  return (p.serializers[type] ?? String)(b);
}

/** The commands whose count is rows changed (PGlite's parseResults: `affectedRows`). */
const CHANGING = new Set(['INSERT', 'UPDATE', 'DELETE', 'COPY', 'MERGE']);

/**
 * A statement's result from its messages, as PGlite's `parse.parseResults(messages, parsers)[0]` gives it (rows as
 * objects by column name, each value through its type's parser; fields; command, affectedRows, rowCount). That copied the
 * instance's few hundred type parsers into a new object at every call and built each row from an array of
 * [name, value] pairs, a noticeable share of the embedded platform's work.
 */
function firstResult(messages: BackendMessage[], parsers: Parsers): Results {
  let fields: { name: string; dataTypeID: number }[] = [];
  const rows: Record<string, unknown>[] = [];
  const parserOf = parsers as Record<number, ((text: string, type: number) => unknown) | undefined>;
  for (const m of messages as { name: string; fields?: unknown[]; text?: string }[]) {
    if (m.name === 'rowDescription') {
      fields = (m.fields as { name: string; dataTypeID: number }[]).map((f) => ({ name: f.name, dataTypeID: f.dataTypeID }));
    } else if (m.name === 'dataRow') {
      const values = m.fields as (string | null)[];
      const row: Record<string, unknown> = {};
      for (let i = 0; i < values.length; i++) {
        const { name, dataTypeID } = fields[i];
        const v = values[i];
        const parser = parserOf[dataTypeID];
        row[name] = v === null || !parser ? v : parser(v, dataTypeID);
      }
      rows.push(row);
    } else if (m.name === 'commandComplete') {
      const words = m.text!.split(' ');
      const command = words[0];
      const count = parseInt(words[words.length - 1], 10);
      return { rows, fields, command, affectedRows: CHANGING.has(command) ? count : 0, ...(Number.isNaN(count) ? {} : { rowCount: count }) } as Results;
    }
  }
  return { affectedRows: 0, rows: [], fields: [] };
}

/**
 * Runs `text` ($n placeholders) as the named statement `name` on a PGlite instance, over the extended protocol,
 * the way PostgreSQL's driver runs a named query: parsed once per instance, bound each time, so its plan is
 * reused after a few runs. PGlite's own query() parses and plans anew each time (the unnamed statement), and
 * the big set-based ingest statements spent a large part of each run in the planner. The steps run under PGlite's
 * query lock, so no other query interleaves with them. Called by the knex client (db/connection.ts), inside knex's own
 * connection handling, for every query: with a null name as the unnamed statement, parsed and described at every run
 * as PGlite's own query() does, but bound as above (arrays and long text in binary) and its result built by
 * firstResult (the API's statements).
 */
export async function runOnPglite(pg: PGlite, name: string | null, text: string, bindings: readonly unknown[]): Promise<Results> {
  const p = pg as unknown as PgliteProtocol;
  const { serialize } = protocol;
  let statements = parsedOn.get(pg);
  if (!statements) parsedOn.set(pg, (statements = new Map()));
  const step = (message: Uint8Array) => p.execProtocolStream(message, { syncToFs: false });
  return pg.runExclusive(async () => {
    const messages: BackendMessage[] = [];
    try {
      // unnamed (null): parsed and described at every run, as PGlite's query() does
      let st = name === null ? undefined : statements.get(name);
      if (!st) {
        const statement = name ?? '';
        await step(serialize.parse({ name: statement, text, types: [] }));
        st = { name: statement, types: parse.parseDescribeStatementResults(await step(serialize.describe({ type: 'S', name: statement }))) };
        if (name !== null) statements.set(name, st);
      }
      const types = st.types;
      const values = bindings.map((b, i) => pgliteValue(p, b, types[i]));
      messages.push(
        ...await step(serialize.bind({ statement: st.name, values })),
        ...await step(serialize.describe({ type: 'P' })),
        ...await step(serialize.execute({})),
      );
    } finally {
      messages.push(...await step(serialize.sync()));
    }
    return firstResult(messages, p.parsers);
  });
}

/** An array parameter with null elements, which both drivers send as SQL NULLs. */
type NullableArray = readonly (string | number | boolean | Date | null)[];

/**
 * Runs one of the ingest path's constant statements as a named prepared statement: each PostgreSQL connection
 * (the pg driver) or the PGlite instance (runOnPglite, through the knex client) parses it once and, after a
 * few executions, reuses its plan. The big set-based statements (trips, distance, rules) spend as long in the
 * planner as in execution, batch after batch.
 */
export function prepared(trx: Knex, sql: string, bindings: readonly (Knex.RawBinding | ArrayParam | NullableArray)[]): Knex.Raw {
  return trx.raw(sql, bindings as Knex.RawBinding[]).options({ name: nameOf(sql) });
}

/**
 * The settings of a batch transaction (batchTransaction), for that transaction only:
 * - `plan_cache_mode = force_generic_plan`: the ingest path's named statements are written for generic plans (LATERAL
 *   reads through indexes, OFFSET 0 fences), but PostgreSQL keeps planning a statement anew at every run while a custom
 *   plan looks cheaper than the generic one, and small batches make it look so: at a few frames a batch the trips and
 *   distance statement was planned at every run, its planning many times its execution.
 * - `enable_bitmapscan = off`: a generic plan cannot know how many of a device's messages lie past a timestamp, takes
 *   a third of them, and reads them through a bitmap (the trips' rows, the rules' messages), where the batch reads two
 *   or three: an index scan costs less (docs/development/performance.md). Nothing on the ingest path combines indexes.
 * Neither is set for the session: they would also apply to the API's statements, planned for their parameters.
 */
const BATCH_SETTINGS = "SELECT set_config('plan_cache_mode', 'force_generic_plan', true), set_config('enable_bitmapscan', 'off', true)";
/** Transaction configs asking for the batch settings (batchTransaction); knex copies them, keeping the key. */
interface BatchConfig extends Knex.TransactionConfig { batch?: boolean }
/** The knex internals batchTransaction wraps: the client's transaction factory and a transaction's BEGIN. */
interface KnexTransaction { begin(conn: unknown): Promise<unknown>; query(conn: unknown, sql: string): Promise<unknown> }
interface TransactionFactory {
  config: { client: unknown };
  transaction(container: unknown, config: BatchConfig | undefined, outerTx: unknown): KnexTransaction;
}
const wrapped = new WeakSet<object>();

/**
 * Runs `handler` in a transaction with BATCH_SETTINGS from its first statement on: the settings go with BEGIN, in the
 * same round trip on PostgreSQL (one simple query), as the statement after it on PGlite (one statement a call, in
 * process). Set by the batch's first statement (fused into it), they would come too late for that statement
 * itself: the insert would be planned anew at every batch.
 */
export function batchTransaction<T>(knex: Knex, handler: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
  const client = knex.client as TransactionFactory;
  if (!wrapped.has(client)) {
    wrapped.add(client);
    const make = client.transaction;
    const pg = client.config.client === 'pg';
    client.transaction = function (this: TransactionFactory, container, config, outerTx) {
      const trx = make.call(this, container, config, outerTx);
      if (config?.batch && !outerTx) {
        const begin = trx.begin;
        trx.begin = pg ? (conn) => trx.query(conn, `BEGIN; ${BATCH_SETTINGS};`)
          : async (conn) => { await begin.call(trx, conn); return trx.query(conn, BATCH_SETTINGS); };
      }
      return trx;
    };
  }
  return knex.transaction(handler, { batch: true } as BatchConfig);
}
