#!/usr/bin/env node
// Run by `npm install` (the `prepare` script, after the build): cuts the slim PostGIS bundle the embedded database
// loads (db/pglite-postgis.ts) into node_modules/.cache now, so that the first `npm start` after an install does not
// spend seconds on it (unpacking the published bundle of three extensions and packing the one drivewire loads; see
// docs/development/performance.md). Where it cannot (no build), the first start cuts it.
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
try {
  const { slimBundle } = await import(pathToFileURL(path.join(root, 'dist', 'db', 'pglite-postgis.js')).href);
  await slimBundle();
} catch (err) {
  process.stderr.write(`drivewire: the slim PostGIS bundle was not cut at install (${err.message}); the first start will\n`);
}
