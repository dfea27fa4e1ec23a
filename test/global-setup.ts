import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestProject } from 'vitest/node';
import { pipeline } from 'node:stream/promises';
import knexFactory from 'knex';
import tar from 'tar-stream';
import { openDatabase, dumpPglite } from '../db/connection.js';
import { migrateLatest } from '../db/migrate.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** A hash of everything that shapes the schema, so the cached template is rebuilt when it changes. */
function schemaHash(): string {
  const h = createHash('sha256');
  const dir = path.join(root, 'db', 'migrations');
  for (const f of fs.readdirSync(dir).sort()) h.update(f).update(fs.readFileSync(path.join(dir, f)));
  h.update(JSON.parse(fs.readFileSync(path.join(root, 'node_modules/@electric-sql/pglite/package.json'), 'utf8')).version);
  return h.digest('hex').slice(0, 16);
}

/**
 * The test databases are cloned from one migrated template (issue 2: PostGIS initialization in PGlite
 * takes tens of seconds, so it happens once and is cached until the migrations change). With
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
  const cacheDir = path.join(root, 'node_modules', '.cache', 'drivewire');
  const file = path.join(cacheDir, `pglite-template-${schemaHash()}.tar`);
  if (!fs.existsSync(file)) {
    fs.mkdirSync(cacheDir, { recursive: true });
    const db = await openDatabase({});
    await migrateLatest(db.knex);
    const dump = await dumpPglite(db);
    await db.close();
    const tmp = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, Buffer.from(await dump.arrayBuffer()));
    fs.renameSync(tmp, file);
  }
  const dir = file.replace(/\.tar$/, '');
  if (!fs.existsSync(dir)) await extractTar(file, dir);
  project.provide('pgliteTemplate', dir);
  return undefined;
}

/**
 * The template as a data directory, which each test file copies and opens from disk: ~1.3 s faster per database
 * than loading the dump into memory (PGlite reads the 64 MB dump through a Blob and writes every file of it into its
 * in-memory file system; a copy takes 0.2–0.4 s and PostgreSQL then reads only the pages it needs).
 */
async function extractTar(file: string, dir: string): Promise<void> {
  const tmp = `${dir}.${process.pid}.tmp`;
  fs.rmSync(tmp, { recursive: true, force: true });
  const extract = tar.extract();
  extract.on('entry', (header, stream, next) => {
    const target = path.join(tmp, header.name.replace(/^\/+/, ''));
    if (header.type === 'directory') {
      fs.mkdirSync(target, { recursive: true });
      stream.resume(); stream.on('end', next);
      return;
    }
    fs.mkdirSync(path.dirname(target), { recursive: true });
    stream.pipe(fs.createWriteStream(target, { mode: header.mode })).on('finish', next).on('error', next);
  });
  await pipeline(fs.createReadStream(file), extract);
  fs.renameSync(tmp, dir);
}

declare module 'vitest' {
  export interface ProvidedContext { pgTemplate?: string; pgliteTemplate?: string }
}
