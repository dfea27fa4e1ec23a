// What a figure was measured with: a result kept in bench/results/ is compared with later
// ones only when the software under it is known.
import fs from 'node:fs';
import type { Knex } from 'knex';

const root = new URL('../', import.meta.url);

/** An installed package's version (from its package.json: some packages' exports hide it from import). */
function installed(name: string): string | null {
  try {
    return JSON.parse(fs.readFileSync(new URL(`node_modules/${name}/package.json`, root), 'utf8')).version;
  } catch {
    return null;
  }
}

export interface Versions {
  node: string;
  aedes: string | null;
  mqtt: string | null;
  /** The webhook worker's HTTP client. */
  undici: string | null;
  /** The database client in use: `pg` on PostgreSQL, `pglite` (and its PostGIS build) embedded. */
  pg?: string | null;
  pglite?: string | null;
  pglitePostgis?: string | null;
  /** The server's `server_version` and `postgis_lib_version()`. */
  postgresql: string | null;
  postgis: string | null;
}

export async function versions(knex: Knex, kind: 'pg' | 'pglite'): Promise<Versions> {
  const { rows: [server] } = await knex.raw(`SELECT current_setting('server_version') AS postgresql,
    (SELECT postgis_lib_version()) AS postgis`).catch(() => ({ rows: [{ postgresql: null, postgis: null }] }));
  return {
    node: process.version,
    aedes: installed('aedes'),
    mqtt: installed('mqtt'),
    undici: installed('undici'),
    ...(kind === 'pg' ? { pg: installed('pg') } : { pglite: installed('@electric-sql/pglite'), pglitePostgis: installed('@electric-sql/pglite-postgis') }),
    postgresql: server.postgresql,
    postgis: server.postgis,
  };
}
