#!/usr/bin/env node
// `npm run build` (and `npm install`, through `prepare`): the TypeScript sources compiled to JavaScript in dist/, so the
// platform runs compiled code instead of tsx compiling every module at start and wrapping its functions at run time.
// esbuild is what tsx itself uses, one file at a time: the output is what tsx runs, without the loader.
// dist/ mirrors the source folders; the files found beside the sources at run time (workers, data) are copied, and
// the folders reached from them by relative path (routes-data, console, node_modules, bench/results) are links
// to the project's own. bin/drivewire.js runs dist/ only while it is newer than every source (see freshness.js).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { BUILT_STAMP, SOURCE_DIRS, sourceFiles } from './freshness.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
// `--out DIR`: build elsewhere than dist/ (tests do, leaving the project's build alone)
const outAt = process.argv.indexOf('--out');
const dist = outAt > 0 ? path.resolve(process.argv[outAt + 1]) : path.join(root, 'dist');
const next = path.join(path.dirname(dist), `.dist-${process.pid}`);
/**
 * Reached by relative paths from compiled files (simulator/route.ts, the console build, bench/results.ts, package
 * versions, the launcher the api bench starts a process with).
 */
const LINKS = ['routes-data', 'console', 'node_modules', 'package.json', 'bench/results', 'bin/drivewire.js'];

const started = Date.now();
const files = sourceFiles(root);
const compiled = files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'));
// bin/'s own JavaScript (this builder, the launcher) runs from the sources, never from dist/
const copied = files.filter((f) => !f.endsWith('.ts') && !f.endsWith('.md') && !(f.startsWith('bin/') && f.endsWith('.js')));

fs.rmSync(next, { recursive: true, force: true });
await build({
  entryPoints: compiled.map((f) => path.join(root, f)), outdir: next, outbase: root,
  format: 'esm', platform: 'node', target: 'node20', bundle: false, sourcemap: 'linked', logLevel: 'warning',
});
for (const f of copied) {
  fs.mkdirSync(path.dirname(path.join(next, f)), { recursive: true });
  fs.copyFileSync(path.join(root, f), path.join(next, f));
}
for (const link of LINKS) {
  const at = path.join(next, link);
  fs.mkdirSync(path.dirname(at), { recursive: true });
  fs.rmSync(at, { recursive: true, force: true });
  fs.symlinkSync(path.relative(path.dirname(at), path.join(root, link)), at);
}
// Stamped with the time the sources were read: an edit made while building leaves the build stale.
fs.writeFileSync(path.join(next, BUILT_STAMP), `${started}\n`);
// Swapped in whole, so a process starting meanwhile sees the old build or the new one, never half of one.
const old = path.join(path.dirname(dist), `.dist-old-${process.pid}`);
if (fs.existsSync(dist)) fs.renameSync(dist, old);
fs.renameSync(next, dist);
fs.rmSync(old, { recursive: true, force: true });
process.stdout.write(`drivewire: compiled ${compiled.length} modules of ${SOURCE_DIRS.join(', ')} to ${dist} in ${Date.now() - started} ms\n`);
