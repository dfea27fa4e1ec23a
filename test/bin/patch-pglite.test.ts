// bin/patch-pglite.js, run at install: PGlite's dlsym reads a symbol's index from a map built once instead of
// searching every export at each lookup; the lookup must give what it gave before.
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain JavaScript module of bin/ (run by npm, not compiled)
import { patchDlsym, pgliteLoaders } from '../../bin/patch-pglite.js';

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
  it('looks up what the original did: the same addresses, the same indexes written', () => {
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
