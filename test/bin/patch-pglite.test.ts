// bin/patch-pglite.js, run at install: PGlite's dlsym reads a symbol's index from a map built once instead of
// searching every export at each lookup; the patched lookup must give what the original gives.
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain JavaScript module of bin/ (run by npm, not compiled)
import { patchDlsym, patchModuleBytes, pgliteLoaders } from '../../bin/patch-pglite.js';

// the shape of the minified loader's lookup, with the names one of PGlite's builds gives it
const LOOKUP = 'if(o=Object.keys(_.exports).indexOf(t),a=_.exports[t],typeof a=="function"){var s=getFunctionAddress(a);'
  + 's?a=s:(a=addFunction(a,a.sig),HEAPU32[r>>2]=o)}return a';

/** The lookup as a function over a library's exports, a table and a heap, as the loader runs it. */
function dlsym(body: string) {
  return new Function('_', 't', 'r', 'getFunctionAddress', 'addFunction', 'HEAPU32', `var a,o;${body}`) as (
    lib: { exports: Record<string, unknown> }, sym: string, ptr: number, getAddress: (f: unknown) => number,
    add: (f: unknown, sig: string) => number, heap: Uint32Array) => unknown;
}

function run(body: string) {
  const lib = { exports: { first: Object.assign(() => 1, { sig: 'i' }), memory: 7, second: Object.assign(() => 2, { sig: 'ii' }),
    third: Object.assign(() => 3, { sig: 'v' }) } as Record<string, unknown> };
  const table = new Map<unknown, number>([[lib.exports.second, 40]]);
  const heap = new Uint32Array(8);
  const lookup = dlsym(body);
  const results = ['first', 'memory', 'second', 'third', 'first'].map((sym, i) =>
    lookup(lib, sym, i * 4, (f) => table.get(f) ?? 0, (f) => { table.set(f, 100 + table.size); return table.get(f)!; }, heap));
  return { results, heap: [...heap] };
}

describe('PGlite dlsym patch', () => {
  it('looks up what the original does: the same addresses, the same indexes written', () => {
    const { source, state } = patchDlsym(LOOKUP);
    expect(state).toBe('patched');
    expect(source).not.toContain('indexOf');
    expect(run(source)).toEqual(run(LOOKUP));
  });

  it('is applied once, and leaves a loader it does not know as it is', () => {
    const once = patchDlsym(LOOKUP).source;
    expect(patchDlsym(once)).toEqual({ source: once, state: 'already' });
    const other = 'function dlsym(h, s) { return lookup(h, s); }';
    expect(patchDlsym(other)).toEqual({ source: other, state: 'not-found' });
  });

  it('is in the installed PGlite, in each of its builds (npm install ran it)', () => {
    const loaders = pgliteLoaders() as string[];
    expect(loaders.length).toBeGreaterThanOrEqual(2);
    for (const file of loaders) expect(patchDlsym(fs.readFileSync(file, 'utf8')).state, file).toBe('already');
  });
});

// the shape of the minified side-module loader: `binary` in the context its closures keep (`peek` stands for them)
const LOADER = 'var loadWebAssemblyModule=(binary,flags)=>{var peek=()=>binary;function postInstantiation(module,instance){'
  + 'return{peek,exports:instance.exports}}function loadModule(){var info={};if(flags.loadAsync){if(binary instanceof '
  + 'WebAssembly.Module){var instance=new WebAssembly.Instance(binary,info);return Promise.resolve(postInstantiation(binary,'
  + 'instance))}return WebAssembly.instantiate(binary,info).then(e=>postInstantiation(e.module,e.instance))}var module=binary '
  + 'instanceof WebAssembly.Module?binary:new WebAssembly.Module(binary),instance=new WebAssembly.Instance(module,info);'
  + 'return postInstantiation(module,instance)}return loadModule()};return loadWebAssemblyModule';

// a module exporting `answer() -> 42`
const WASM = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 127, 3, 2, 1, 0, 7, 10, 1, 6, 97, 110, 115, 119,
  101, 114, 0, 0, 10, 6, 1, 4, 0, 65, 42, 11]);

type Loaded = { peek(): unknown; exports: { answer(): number } };
const loader = (source: string) => new Function(source)() as (binary: unknown, flags: { loadAsync: boolean }) => Loaded | Promise<Loaded>;

describe('PGlite side-module loader patch', () => {
  it('loads as the original does, and keeps no hold on the bytes once the module is instantiated, loaded either way', async () => {
    const { source, state } = patchModuleBytes(LOADER);
    expect(state).toBe('patched');
    for (const loadAsync of [true, false]) {
      const before = await loader(LOADER)(WASM, { loadAsync });
      const after = await loader(source)(WASM, { loadAsync });
      expect(before.exports.answer()).toBe(42);
      expect(after.exports.answer()).toBe(42);
      expect(before.peek()).toBe(WASM);
      expect(after.peek()).toBeNull();
    }
  });

  it('is applied once, leaves a loader it does not know as it is, and is in the installed PGlite', () => {
    const once = patchModuleBytes(LOADER).source;
    expect(patchModuleBytes(once)).toEqual({ source: once, state: 'already' });
    const other = LOADER.replace('.then(e=>postInstantiation(e.module,e.instance))', '.then(finish)');
    expect(patchModuleBytes(other)).toEqual({ source: other, state: 'not-found' });
    for (const file of pgliteLoaders() as string[]) expect(patchModuleBytes(fs.readFileSync(file, 'utf8')).state, file).toBe('already');
  });
});
