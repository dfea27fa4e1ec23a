#!/usr/bin/env node
// Run by `npm install` (the `postinstall` script): makes the embedded database's symbol lookups constant-time in the
// installed PGlite. Its Emscripten loader's `dlsym` (`__dlsym_js`) computed a symbol's index as
// `Object.keys(lib.exports).indexOf(symbol)` at every call: an array of all of the PostGIS library's exports built
// and searched for each of the ~2,000 lookups `CREATE EXTENSION postgis` makes (a C function's symbol and its info
// record): seconds of a new data directory's first start, most of its CPU profile in `__dlsym_js`
// (docs/development/performance.md). The index is only needed when the function is added to the table, and is now read from a
// map of the library's exports built once (its exports never change once loaded). Same result, same table entries.
//
// It also lets a side module's bytes go once they are compiled. The loader's `loadWebAssemblyModule(binary, …)` holds
// `binary` in its closure's context, and that context lives as long as the library: its `postInstantiation` uses a
// direct `eval` (for EM_ASM / EM_JS), which keeps every variable of the enclosing scopes. So the PostGIS library
// stayed in memory twice, as its file and as these bytes (in a heap snapshot of the idle embedded platform:
// `Context -[binary]-> Uint8Array`). `binary` is cleared once the module is instantiated; nothing reads it after.
//
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

// the instantiation of a side module, asynchronous (`.then(e=>postInstantiation(e.module,e.instance))`) and synchronous
// (`…new WebAssembly.Instance(module,info);return postInstantiation(module,instance)`), as the minifier writes them
const INSTANTIATED = [
  [/(WebAssembly\.instantiate\(binary,info\)\.then\((\w+)=>)(postInstantiation\(\2\.module,\2\.instance\))\)/g,
    (_m, head, _e, call) => `${head}(binary=null,${call}))`],
  [/(instance=new WebAssembly\.Instance\(module,info\);return )(postInstantiation\(module,instance\))/g,
    (_m, head, call) => `${head}(binary=null,${call})`],
];
const RELEASED = '(binary=null,postInstantiation(';

/** The loader's source with a side module's bytes released once it is instantiated; `state` as `patchDlsym`'s. */
export function patchModuleBytes(source) {
  if (source.includes(RELEASED)) return { source, state: 'already' };
  let patched = source;
  for (const [re, replace] of INSTANTIATED) {
    const before = patched;
    patched = patched.replace(re, replace);
    if (patched === before) return { source, state: 'not-found' };
  }
  return { source: patched, state: 'patched' };
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
  const patches = [[patchDlsym, 'dlsym'], [patchModuleBytes, 'side-module loader']];
  for (const file of pgliteLoaders()) {
    let source = fs.readFileSync(file, 'utf8');
    let changed = false;
    for (const [patch, what] of patches) {
      const result = patch(source);
      if (result.state === 'patched') {
        source = result.source;
        changed = true;
      }
      if (result.state === 'not-found') process.stderr.write(`drivewire: ${file}: PGlite's ${what} is not the one this patch knows; left as it is\n`);
    }
    if (changed) fs.writeFileSync(file, source);
  }
}
