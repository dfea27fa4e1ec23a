#!/usr/bin/env node
// Run by `npm install` (the `postinstall` script): makes the embedded database's symbol lookups constant-time in the
// installed PGlite. Its Emscripten loader's `dlsym` (`__dlsym_js`) computed a symbol's index as
// `Object.keys(lib.exports).indexOf(symbol)` at every call: an array of all of the PostGIS library's exports built
// and searched for each of the ~2,000 lookups `CREATE EXTENSION postgis` makes (a C function's symbol and its info
// record), ~3 s of a new data directory's first start (issue 13: 7.7 → 4.6 s to `/health`, 41% of that start's CPU
// profile in `__dlsym_js`). The index is only needed when the function is added to the table, and is now read from a
// map of the library's exports built once (its exports never change once loaded). Same result, same table entries.
// Idempotent; a PGlite whose loader no longer has that code (a newer version) is left as it is, with a warning.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

// `if(i=Object.keys(lib.exports).indexOf(sym),f=lib.exports[sym],typeof f=="function"){var a=getFunctionAddress(f);
//  a?f=a:(f=addFunction(f,f.sig),HEAPU32[ptr>>2]=i)}`, with the minifier's names
const LOOKUP = /if\((\w+)=Object\.keys\((\w+)\.exports\)\.indexOf\((\w+)\),(\w+)=\2\.exports\[\3\],typeof \4=="function"\)\{var (\w+)=getFunctionAddress\(\4\);\5\?\4=\5:\(\4=addFunction\(\4,\4\.sig\),HEAPU32\[(\w+)>>2\]=\1\)\}/g;
const MARK = 'symbolIndexes';

/** The loader's source with the lookup patched; `state`: patched now, patched before, or not found. */
export function patchDlsym(source) {
  if (source.includes(`.${MARK}??=`)) return { source, state: 'already' };
  let count = 0;
  const patched = source.replace(LOOKUP, (_m, index, lib, sym, fn, addr, ptr) => {
    count++;
    return `if(${fn}=${lib}.exports[${sym}],typeof ${fn}=="function"){var ${addr}=getFunctionAddress(${fn});${addr}?${fn}=${addr}:`
      + `(${index}=(${lib}.${MARK}??=new Map(Object.keys(${lib}.exports).map((k,i)=>[k,i]))).get(${sym}),`
      + `${fn}=addFunction(${fn},${fn}.sig),HEAPU32[${ptr}>>2]=${index})}`;
  });
  return count === 1 ? { source: patched, state: 'patched' } : { source, state: 'not-found' };
}

/** The installed PGlite's loader files (its ESM and CommonJS builds). */
export function pgliteLoaders(from = path.dirname(fileURLToPath(import.meta.url))) {
  const require = createRequire(path.join(from, 'noop.js'));
  let dist;
  try {
    dist = path.dirname(require.resolve('@electric-sql/pglite'));
  } catch {
    return [];
  }
  return ['index.js', 'index.cjs', 'pglite.cjs'].map((f) => path.join(dist, f)).filter((f) => fs.existsSync(f));
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  for (const file of pgliteLoaders()) {
    const { source, state } = patchDlsym(fs.readFileSync(file, 'utf8'));
    if (state === 'patched') fs.writeFileSync(file, source);
    if (state === 'not-found') process.stderr.write(`drivewire: ${file}: PGlite's dlsym is not the one this patch knows; left as it is\n`);
  }
}
