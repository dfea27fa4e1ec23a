import type { Knex } from 'knex';

/** Whether the server can compress values with lz4 (PGlite's build cannot: pglz only). */
export async function hasLz4(knex: Knex): Promise<boolean> {
  const { rows } = await knex.raw(
    "SELECT 'lz4' = ANY (enumvals) AS lz4 FROM pg_settings WHERE name = 'default_toast_compression'");
  return Boolean(rows[0]?.lz4);
}

/**
 * A column's values compressed with lz4 from now on where the server has it (elsewhere it keeps pglz); values
 * already stored keep their method. `table` and `column`: a migration's own names, not input.
 */
export async function compressWithLz4(knex: Knex, table: string, column: string): Promise<void> {
  if (await hasLz4(knex)) await knex.raw(`ALTER TABLE ${table} ALTER COLUMN ${column} SET COMPRESSION lz4`);
}

/** compressWithLz4 undone: the column back to the server's default method. */
export async function compressByDefault(knex: Knex, table: string, column: string): Promise<void> {
  if (await hasLz4(knex)) await knex.raw(`ALTER TABLE ${table} ALTER COLUMN ${column} SET COMPRESSION DEFAULT`);
}
