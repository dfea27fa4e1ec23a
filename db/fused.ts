// Several set-based statements in one round trip. Under load a batch transaction's time goes more to its round
// trips (each waits for a busy core on both sides) than to its statements' work, so independent derived-state
// statements of a batch run as one statement (issues 11 and 13).
import type { Knex } from 'knex';
import { prepared } from './prepared.js';

/**
 * A statement written as `WITH <ctes> <main>` (`?` placeholders; `ctes` may be empty), so that it can run alone or
 * fused with others.
 * `main` is a SELECT or a data-modifying statement with RETURNING. A module-level constant: fused texts are built
 * once per combination of statements and cached by their identity.
 */
export interface SqlStatement {
  ctes: string;
  main: string;
  /**
   * The main statement's columns, for a statement that returns many rows: they come back column by column (a JSON
   * array each, aggregated once) and are put back into rows here, where row_to_json looks up each column's type and
   * output function again for every row (a batch can return a row per rule of its devices).
   */
  columns?: readonly string[];
}

/** A statement with this batch's bindings (in text order). */
export interface SqlPart {
  statement: SqlStatement;
  bindings: readonly unknown[];
}

/**
 * A row of a part's result, as JSON: timestamps as ISO text, numbers as numbers. Built as json text (row_to_json): as
 * jsonb (to_jsonb, jsonb_agg) each row costs PostgreSQL noticeably more (docs/development/performance.md).
 */
export type PartRow = Record<string, unknown>;

/**
 * The parts as one statement: each part's CTEs, then its main statement as the CTE `part_<i>`, and one row
 * holding each part's rows as a JSON array (in the order its main statement returns them). The parts see the
 * same snapshot and cannot see each other's writes, so only independent statements may be fused; their CTE
 * names must differ (checked, with the text built, once per combination of statements).
 */
export function fuse(parts: readonly SqlPart[]): { sql: string; bindings: unknown[] } {
  return { sql: fusedText(parts.map((p) => p.statement)), bindings: parts.flatMap((part) => [...part.bindings]) };
}

const ids = new WeakMap<SqlStatement, number>();
let nextId = 0;
const texts = new Map<string, string>();

function fusedText(statements: SqlStatement[]): string {
  const key = statements.map((st) => {
    let id = ids.get(st);
    if (id === undefined) ids.set(st, (id = nextId++));
    return id;
  }).join(',');
  let sql = texts.get(key);
  if (sql === undefined) {
    const seen = new Map<string, number>();
    statements.forEach((st, i) => {
      for (const name of cteNames(st.ctes)) {
        if (seen.has(name) && seen.get(name) !== i) throw new Error(`fused statements both define the CTE "${name}"`);
        seen.set(name, i);
      }
    });
    const ctes = statements.map((st, i) => [st.ctes.trim(), `part_${i} AS (${st.main})`].filter(Boolean).join(',\n  ')).join(',\n');
    const select = statements.map((st, i) => `(SELECT ${st.columns
      ? `json_build_object(${st.columns.map((c) => `'${c}', coalesce(json_agg(x.${c}), '[]'::json)`).join(', ')})`
      : "coalesce(json_agg(row_to_json(x)), '[]'::json)"} FROM part_${i} x) AS part_${i}`).join(', ');
    texts.set(key, (sql = `WITH ${ctes}\n  SELECT ${select}`));
  }
  return sql;
}

/** The CTE names defined at the top level of a CTE list (`name AS (` or `name AS MATERIALIZED (` at depth 0). */
function cteNames(ctes: string): string[] {
  const names: string[] = [];
  let depth = 0;
  let start = 0;
  const flush = (end: number) => {
    const m = /^\s*([a-z_][a-z0-9_]*)\s+AS\s+(NOT\s+)?(MATERIALIZED\s+)?$/i.exec(ctes.slice(start, end));
    if (m) names.push(m[1].toLowerCase());
  };
  for (let i = 0; i < ctes.length; i++) {
    const c = ctes[i];
    if (c === '-' && ctes[i + 1] === '-') {
      // a comment, to its line's end (its parentheses do not count)
      const nl = ctes.indexOf('\n', i);
      i = nl < 0 ? ctes.length : nl;
      if (depth === 0) start = i + 1;
    } else if (c === '(') {
      if (depth === 0) flush(i);
      depth++;
    } else if (c === ')') depth--;
    else if (c === ',' && depth === 0) start = i + 1;
  }
  return names;
}

/**
 * Runs the parts (null ones skipped) as one named prepared statement; returns each part's rows (null for the
 * skipped ones). No parts: no statement.
 */
export async function runParts(trx: Knex, parts: readonly (SqlPart | null)[]): Promise<(PartRow[] | null)[]> {
  const present = parts.filter((p): p is SqlPart => p !== null);
  if (!present.length) return parts.map(() => null);
  const { sql, bindings } = fuse(present);
  const { rows } = await prepared(trx, sql, bindings as Knex.RawBinding[]);
  const row = (rows as Record<string, unknown>[])[0];
  let k = 0;
  return parts.map((p) => {
    if (!p) return null;
    // json: both drivers parse it
    const out = row[`part_${k++}`];
    return p.statement.columns ? rowsOf(p.statement.columns, out as Record<string, unknown[]>) : out as PartRow[];
  });
}

/** A part's rows from its columns (SqlStatement.columns): the i-th row of the i-th value of each. */
function rowsOf(columns: readonly string[], values: Record<string, unknown[]>): PartRow[] {
  const n = values[columns[0]].length;
  const rows: PartRow[] = new Array(n);
  for (let i = 0; i < n; i++) {
    const r: PartRow = {};
    for (const c of columns) r[c] = values[c][i];
    rows[i] = r;
  }
  return rows;
}
