#!/usr/bin/env node
// The `drivewire` binary. It runs the compiled JavaScript in dist/ (`npm run build`, also run by `npm install`) while
// that build is newer than every source; otherwise the TypeScript sources through tsx, so a checkout or an edit
// needs no build step. DRIVEWIRE_TSX=1 always takes the sources.
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { distIsFresh } from './freshness.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
if (process.env.DRIVEWIRE_TSX !== '1' && distIsFresh(root)) {
  await import(pathToFileURL(path.join(root, 'dist', 'bin', 'cli.js')).href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('./cli.ts');
}
