import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestProject } from 'vitest/node';
import knexFactory from 'knex';
import { openDatabase } from '../db/connection.js';
import { migrateLatest } from '../db/migrate.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/**
 * The migrations and the repository's modules they import, transitively (the SQL functions a migration creates may be
 * written in one: db/message-data.sql.ts), in a stable order.
 */
function schemaSources(): string[] {
  const dir = path.join(root, 'db', 'migrations');
  const seen = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file) || !fs.existsSync(file)) return;
    seen.add(file);
    for (const [, spec] of fs.readFileSync(file, 'utf8').matchAll(/from '(\.{1,2}\/[^']+)\.js'/g)) {
      visit(path.resolve(path.dirname(file), `${spec}.ts`));
    }
  };
  for (const f of fs.readdirSync(dir).sort()) visit(path.join(dir, f));
  return [...seen].sort();
}

/** A hash of everything that shapes the schema, so the cached template is rebuilt when it changes. */
function schemaHash(): string {
  const h = createHash('sha256');
  for (const f of schemaSources()) h.update(path.relative(root, f)).update(fs.readFileSync(f));
  h.update(JSON.parse(fs.readFileSync(path.join(root, 'node_modules/@electric-sql/pglite/package.json'), 'utf8')).version);
  return h.digest('hex').slice(0, 16);
}

/**
 * The test databases are cloned from one migrated template: PostGIS initialization in PGlite takes tens of
 * seconds, so it happens once and is cached until the migrations change. With
 * TEST_DATABASE_URL the template is a real PostgreSQL database that each test file copies.
 */
export default async function setup(project: TestProject) {
  const url = process.env.TEST_DATABASE_URL;
  if (url) {
    const name = `dw_tpl_${randomBytes(4).toString('hex')}`;
    const admin = knexFactory({ client: 'pg', connection: url, pool: { min: 0, max: 1 } });
    await admin.raw(`CREATE DATABASE ${name}`);
    const target = new URL(url); target.pathname = `/${name}`;
    const db = await openDatabase({ databaseUrl: target.toString(), poolMax: 1 });
    await migrateLatest(db.knex);
    await db.close();
    project.provide('pgTemplate', name);
    return async () => {
      const dbs = await admin.raw(`SELECT datname FROM pg_database WHERE datname LIKE '${name}%' OR datname LIKE 'dw_t_${name.slice(7)}%'`);
      for (const { datname } of dbs.rows) await admin.raw(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`);
      await admin.destroy();
    };
  }
  // Built once on disk, as `serve` keeps its data: each test file copies the directory and opens the copy (faster
  // than loading a dump of tens of megabytes into PGlite's in-memory file system; PostgreSQL then reads only the
  // pages it needs).
  const cacheDir = path.join(root, 'node_modules', '.cache', 'drivewire');
  const dir = path.join(cacheDir, `pglite-template-${schemaHash()}`);
  if (!fs.existsSync(dir)) {
    const tmp = `${dir}.${process.pid}.tmp`;
    fs.rmSync(tmp, { recursive: true, force: true });
    const db = await openDatabase({ pgliteDir: tmp });
    await migrateLatest(db.knex);
    await db.close();
    fs.renameSync(tmp, dir);
  }
  // Templates of earlier schemas go (tens of megabytes each): otherwise every migration added would leave one behind.
  for (const name of fs.readdirSync(cacheDir)) {
    if (/^pglite-template-[0-9a-f]+$/.test(name) && path.join(cacheDir, name) !== dir) fs.rmSync(path.join(cacheDir, name), { recursive: true, force: true });
  }
  project.provide('pgliteTemplate', dir);
  return undefined;
}

declare module 'vitest' {
  export interface ProvidedContext { pgTemplate?: string; pgliteTemplate?: string }
}
