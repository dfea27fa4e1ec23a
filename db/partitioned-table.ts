import type { Knex } from 'knex';
import { createPartitions, spanStart, type PartitionedTable } from './partitions.js';

/**
 * Converting a plain table into one partitioned by db/partitions.ts, keeping every row: for a migration (it runs in
 * the migration's transaction, so a failure leaves the table as it was).
 */

export interface ConvertOptions {
  /**
   * A primary key or unique index of a partitioned table must contain the partition key. true: one that lacks it gets
   * it as its last column (unique per id and time instead of per id; right where the key is a random id). false
   * (default): such a key is refused.
   */
  widenUniqueKeys?: boolean;
  /** Partitions also made from the span holding now to this many days ahead (default 2). */
  aheadDays?: number;
  now?: Date;
}

interface Key { name: string; kind: string; def: string; hasColumn: boolean }

/** `def` with `, "column"` added at the end of its first parenthesized list after `from` (the key columns). */
export function withColumnAdded(def: string, column: string, from = 0): string {
  const open = def.indexOf('(', from);
  if (open < 0) throw new Error(`No column list in ${def}`);
  let depth = 0;
  let quote: string | null = null;
  for (let i = open; i < def.length; i++) {
    const ch = def[i];
    if (quote) { if (ch === quote) quote = null; continue; }
    if (ch === '"' || ch === "'") quote = ch;
    else if (ch === '(') depth++;
    else if (ch === ')' && --depth === 0) return `${def.slice(0, i)}, "${column}"${def.slice(i)}`;
  }
  throw new Error(`Unbalanced column list in ${def}`);
}

/** What a table carries beyond its columns, read before it is renamed (the definitions then name the original). */
async function describe(knex: Knex, table: string, column: string) {
  // one after the other: a migration's transaction is one connection
  const { rows: referencing } = await knex.raw(`SELECT conname, conrelid::regclass::text AS t FROM pg_constraint
    WHERE confrelid = ?::regclass AND contype = 'f'`, [table]);
  const { rows: identity } = await knex.raw(`SELECT attname FROM pg_attribute WHERE attrelid = ?::regclass AND attidentity <> ''`, [table]);
  const { rows: options } = await knex.raw(`SELECT reloptions FROM pg_class WHERE oid = ?::regclass`, [table]);
  if (referencing.length) {
    throw new Error(`${table} is referenced by ${referencing.map((r: { conname: string; t: string }) => `${r.t}.${r.conname}`).join(', ')}: drop those keys first`);
  }
  if (identity.length) throw new Error(`${table} has identity columns (${identity.map((r: { attname: string }) => r.attname).join(', ')})`);
  const { rows: constraints } = await knex.raw(`
    SELECT conname AS name, contype AS kind, pg_get_constraintdef(k.oid) AS def,
      (SELECT attnum FROM pg_attribute WHERE attrelid = k.conrelid AND attname = ?) = ANY (k.conkey) AS "hasColumn"
    FROM pg_constraint k WHERE conrelid = ?::regclass AND contype IN ('p', 'u', 'x', 'f') ORDER BY contype <> 'p', conname`,
  [column, table]);
  const { rows: indexes } = await knex.raw(`
    SELECT c.relname AS name, CASE WHEN i.indisunique THEN 'u' ELSE 'i' END AS kind, pg_get_indexdef(i.indexrelid) AS def,
      (SELECT attnum FROM pg_attribute WHERE attrelid = i.indrelid AND attname = ?) = ANY (i.indkey::int2[]) AS "hasColumn"
    FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
    WHERE i.indrelid = ?::regclass AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid AND k.conrelid = i.indrelid)
    ORDER BY c.relname`, [column, table]);
  const { rows: triggers } = await knex.raw(`SELECT pg_get_triggerdef(oid) AS def FROM pg_trigger
    WHERE tgrelid = ?::regclass AND NOT tgisinternal ORDER BY tgname`, [table]);
  const { rows: targets } = await knex.raw(`SELECT attname, attstattarget FROM pg_attribute
    WHERE attrelid = ?::regclass AND attnum > 0 AND NOT attisdropped AND attstattarget >= 0`, [table]);
  const { rows: sequences } = await knex.raw(`SELECT s.relname AS seq, a.attname AS col FROM pg_depend d
    JOIN pg_class s ON s.oid = d.objid AND s.relkind = 'S'
    JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
    WHERE d.refobjid = ?::regclass AND d.classid = 'pg_class'::regclass AND d.deptype = 'a'`, [table]);
  return {
    constraints: constraints as Key[], indexes: indexes as Key[], triggers: (triggers as { def: string }[]).map((t) => t.def),
    targets: targets as { attname: string; attstattarget: number }[], sequences: sequences as { seq: string; col: string }[],
    reloptions: (options[0]?.reloptions ?? null) as string[] | null,
  };
}

/** A key's definition that contains the partition key, or a refusal. */
function keyed(key: Key, column: string, widen: boolean, kind: 'constraint' | 'index'): string {
  if (key.kind === 'f' || key.kind === 'i' || key.hasColumn) return key.def;
  if (!widen || key.kind === 'x') throw new Error(`${key.name} is unique without the partition key ${column}`);
  return kind === 'index' ? withColumnAdded(key.def, column, key.def.indexOf(' USING ')) : withColumnAdded(key.def, column);
}

/**
 * `spec.table` as a table partitioned by `spec.column`, with the same columns, defaults, checks, keys, indexes,
 * triggers, statistics targets and rows; its sequences now belong to the new table. Keys referencing the table from
 * others, and identity columns, are refused. Storage parameters go to each partition: `spec.storage` must be given
 * where the table has some. Returns the number of rows moved.
 */
export async function convertToPartitioned(knex: Knex, spec: PartitionedTable, opts: ConvertOptions = {}): Promise<number> {
  const { table, column } = spec;
  const d = await describe(knex, table, column);
  if (d.reloptions?.length && !spec.storage) throw new Error(`${table} has storage parameters (${d.reloptions.join(', ')}): give them as storage`);
  const constraints = d.constraints.map((k) => `ALTER TABLE ${table} ADD CONSTRAINT "${k.name}" ${keyed(k, column, Boolean(opts.widenUniqueKeys), 'constraint')}`);
  const indexes = d.indexes.map((k) => keyed(k, column, Boolean(opts.widenUniqueKeys), 'index'));
  const old = `${table}_unpartitioned`;

  await knex.raw(`ALTER TABLE ${table} RENAME TO ${old}`);
  await knex.raw(`CREATE TABLE ${table} (LIKE ${old} INCLUDING DEFAULTS INCLUDING GENERATED INCLUDING CONSTRAINTS
    INCLUDING STORAGE INCLUDING COMPRESSION INCLUDING COMMENTS) PARTITION BY RANGE (${column})`);
  if (d.targets.length) {
    await knex.raw(`ALTER TABLE ${table} ${d.targets.map((t) => `ALTER COLUMN "${t.attname}" SET STATISTICS ${Number(t.attstattarget)}`).join(', ')}`);
  }
  for (const s of d.sequences) await knex.raw(`ALTER SEQUENCE "${s.seq}" OWNED BY ${table}."${s.col}"`);

  const now = opts.now ?? new Date();
  const { rows: [range] } = await knex.raw(`SELECT min(${column}) AS lo, max(${column}) AS hi, count(*)::float8 AS n FROM ${old}`);
  if (range.lo) await createPartitions(knex, spec, new Date(range.lo), new Date(range.hi));
  await createPartitions(knex, spec, spanStart(spec.span, now), new Date(now.getTime() + (opts.aheadDays ?? 2) * 86_400_000));
  await knex.raw(`INSERT INTO ${table} SELECT * FROM ${old}`);
  await knex.raw(`DROP TABLE ${old}`);

  // after the rows: one index build each instead of an insert per row and index, and no trigger fired by the move
  for (const statement of [...constraints, ...indexes, ...d.triggers]) await knex.raw(statement);
  return range.n;
}

/**
 * The reverse of convertToPartitioned (a migration's down): `spec.table` as a plain table with the same columns,
 * defaults, checks, keys (as they are now: a key widened by the partition key stays widened), indexes, triggers and
 * rows, storage parameters from `spec.storage`. Returns the number of rows moved.
 */
export async function convertToPlain(knex: Knex, spec: PartitionedTable): Promise<number> {
  const { table } = spec;
  const { rows: triggers } = await knex.raw(`SELECT pg_get_triggerdef(oid) AS def FROM pg_trigger
    WHERE tgrelid = ?::regclass AND NOT tgisinternal AND tgparentid = 0 ORDER BY tgname`, [table]);
  const { rows: sequences } = await knex.raw(`SELECT s.relname AS seq, a.attname AS col FROM pg_depend d
    JOIN pg_class s ON s.oid = d.objid AND s.relkind = 'S'
    JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
    WHERE d.refobjid = ?::regclass AND d.classid = 'pg_class'::regclass AND d.deptype = 'a'`, [table]);
  const { rows: keys } = await knex.raw(`SELECT conname AS name, pg_get_constraintdef(oid) AS def FROM pg_constraint
    WHERE conrelid = ?::regclass AND contype IN ('p', 'u', 'f') AND conparentid = 0 ORDER BY contype <> 'p', conname`, [table]);
  const { rows: indexes } = await knex.raw(`SELECT pg_get_indexdef(i.indexrelid) AS def FROM pg_index i
    WHERE i.indrelid = ?::regclass AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid)`, [table]);
  const { rows: targets } = await knex.raw(`SELECT attname, attstattarget FROM pg_attribute
    WHERE attrelid = ?::regclass AND attnum > 0 AND NOT attisdropped AND attstattarget >= 0`, [table]);
  // the definitions are read before the rename, so they name the table itself
  const old = `${table}_partitioned`;
  await knex.raw(`ALTER TABLE ${table} RENAME TO ${old}`);
  await knex.raw(`CREATE TABLE ${table} (LIKE ${old} INCLUDING DEFAULTS INCLUDING GENERATED INCLUDING CONSTRAINTS
    INCLUDING STORAGE INCLUDING COMPRESSION INCLUDING COMMENTS)${spec.storage ? ` WITH (${spec.storage})` : ''}`);
  if (targets.length) {
    await knex.raw(`ALTER TABLE ${table} ${targets.map((t: { attname: string; attstattarget: number }) => `ALTER COLUMN "${t.attname}" SET STATISTICS ${Number(t.attstattarget)}`).join(', ')}`);
  }
  for (const s of sequences as { seq: string; col: string }[]) await knex.raw(`ALTER SEQUENCE "${s.seq}" OWNED BY ${table}."${s.col}"`);
  const { rows: [{ n }] } = await knex.raw(`WITH moved AS (INSERT INTO ${table} SELECT * FROM ${old} RETURNING 1) SELECT count(*)::float8 AS n FROM moved`);
  await knex.raw(`DROP TABLE ${old}`);
  for (const k of keys as { name: string; def: string }[]) await knex.raw(`ALTER TABLE ${table} ADD CONSTRAINT "${k.name}" ${k.def}`);
  for (const i of indexes as { def: string }[]) await knex.raw(i.def.replace(' ON ONLY ', ' ON '));
  for (const tr of triggers as { def: string }[]) await knex.raw(tr.def);
  return n;
}
