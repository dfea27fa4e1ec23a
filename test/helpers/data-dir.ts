import path from 'node:path';
import { copyPgliteTemplate } from './db.js';

/**
 * Fills `<dataDir>/pgdata` with the suite's migrated PGlite template, so a real `drivewire serve` on it
 * opens a ready database (seconds) instead of initialising PostgreSQL and PostGIS (tens of seconds on a
 * loaded machine). Without a PGlite template (a run on PostgreSQL) the directory is left empty.
 */
export async function seedPgliteDataDir(dataDir: string): Promise<void> {
  copyPgliteTemplate(path.join(dataDir, 'pgdata'));
}
