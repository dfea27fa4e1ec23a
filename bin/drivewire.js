#!/usr/bin/env -S MALLOC_MMAP_THRESHOLD_=131072 node --max-semi-space-size=64
// The `drivewire` binary. It runs the compiled JavaScript in dist/ (`npm run build`, also run by `npm install`) while
// that build is newer than every source; otherwise the TypeScript sources through tsx, so a checkout or an edit
// needs no build step. DRIVEWIRE_TSX=1 always takes the sources.
// --max-semi-space-size=64, in the shebang only (package.json's scripts run this file): a batch's frames live about
// 100 ms, through several scavenges of V8's default 16 MB young generation, which copied them each time; with 64 MB the
// gateway spends less CPU per frame and stores more frames/s (docs/development/performance.md). V8 reads it only at start.
// MALLOC_MMAP_THRESHOLD_=131072, also in the shebang (glibc reads it when the process starts): blocks from 128 KB are
// mapped and unmapped on their own, as glibc does by default until the first such free raises the threshold (dynamic
// adjustment, which setting it turns off). Raised, the start's large short-lived blocks (V8 compiling PGlite's
// WebAssembly) were carved from the heap, which glibc could not give back: an embedded restart kept more RSS, for the
// same ingest (docs/development/performance.md).
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
