import fs from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import tar from 'tar-stream';
import { inject } from 'vitest';

/**
 * Fills `<dataDir>/pgdata` with the suite's migrated PGlite template, so a real `drivewire serve` on it
 * opens a ready database (seconds) instead of initialising PostgreSQL and PostGIS (tens of seconds on a
 * loaded machine). Without a PGlite template (a run on PostgreSQL) the directory is left empty.
 */
export async function seedPgliteDataDir(dataDir: string): Promise<void> {
  const file = inject('pgliteTemplate');
  if (!file) return;
  const root = path.join(dataDir, 'pgdata');
  const extract = tar.extract();
  extract.on('entry', (header, stream, next) => {
    const target = path.join(root, header.name.replace(/^\/+/, ''));
    if (!target.startsWith(root)) { stream.resume(); stream.on('end', next); return; }
    if (header.type === 'directory') {
      fs.mkdirSync(target, { recursive: true });
      stream.resume(); stream.on('end', next);
      return;
    }
    fs.mkdirSync(path.dirname(target), { recursive: true });
    stream.pipe(fs.createWriteStream(target, { mode: header.mode })).on('finish', next).on('error', next);
  });
  await pipeline(fs.createReadStream(file), extract);
}
