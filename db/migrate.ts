import type { Knex } from 'knex';
import { MIGRATIONS } from './migrations/index.js';
import { releaseLoadedPostgis } from './pglite-postgis.js';
import { pgliteOf } from './connection.js';

/** Migrations are listed explicitly (no directory scanning) so they load the same under tsx and vitest. */
const source: Knex.MigrationSource<string> = {
  getMigrations: async () => Object.keys(MIGRATIONS),
  getMigrationName: (name) => name,
  getMigration: async (name) => MIGRATIONS[name],
};

/** Applies the pending migrations; on PGlite then frees the extension files it will not read again. */
export async function migrateLatest(knex: Knex): Promise<string[]> {
  const [, applied] = await knex.migrate.latest({ migrationSource: source });
  const pglite = pgliteOf(knex);
  if (pglite) await releaseLoadedPostgis(pglite);
  return applied as string[];
}

export async function migrationStatus(knex: Knex): Promise<{ applied: string[]; pending: string[] }> {
  const [applied, pending] = await knex.migrate.list({ migrationSource: source });
  return { applied: (applied as { name: string }[]).map((m) => m.name), pending: pending as string[] };
}
