import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import knexFactory from 'knex';
import { openDatabase, type Db } from '../../db/connection.js';

/** Copies of the template not yet removed by their close(): removed when the worker exits. */
const leftBehind = new Set<string>();
process.on('exit', () => { for (const dir of leftBehind) fs.rmSync(dir, { recursive: true, force: true }); });

/** A fresh database for one test file: a clone of the migrated template (PGlite or PostgreSQL). */
export async function createTestDb(): Promise<Db & { url: string | null }> {
  const url = process.env.TEST_DATABASE_URL;
  const template = inject('pgTemplate');
  if (url && template) {
    const name = `dw_t_${template.slice(7)}_${randomBytes(4).toString('hex')}`;
    const admin = knexFactory({ client: 'pg', connection: url, pool: { min: 0, max: 1 } });
    for (let attempt = 0; ; attempt++) {
      try { await admin.raw(`CREATE DATABASE ${name} TEMPLATE ${template}`); break; } catch (err) {
        if (attempt > 20) throw err; // the template is briefly busy while another file clones it
        await new Promise((r) => setTimeout(r, 100 + Math.random() * 200));
      }
    }
    await admin.destroy();
    const target = new URL(url); target.pathname = `/${name}`;
    const db = await openDatabase({ databaseUrl: target.toString() });
    return Object.assign(db, { url: target.toString() });
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-test-db-'));
  leftBehind.add(dir);
  copyPgliteTemplate(dir);
  const db = await openDatabase({ pgliteDir: dir });
  const close = db.close;
  return Object.assign(db, {
    url: null,
    close: async () => {
      try { await close(); } finally { fs.rmSync(dir, { recursive: true, force: true }); leftBehind.delete(dir); }
    },
  });
}

/**
 * Copies the suite's migrated PGlite data directory (test/global-setup.ts) to `dir`, so a database or a real `drivewire
 * serve` opened on it starts ready (seconds) instead of initialising PostgreSQL and PostGIS (tens of seconds on a
 * loaded machine). A run on PostgreSQL has no PGlite template: `dir` is left as it is.
 */
export function copyPgliteTemplate(dir: string): void {
  const template = inject('pgliteTemplate');
  if (template) fs.cpSync(template, dir, { recursive: true });
}
