import type { PGlite } from '@electric-sql/pglite';

/** The PGlite internals unwindOnError drives: the backend's C stack pointer and the two steps around an ERROR. */
interface PgliteBackend {
  mod: {
    /** The WebAssembly global every module of the build keeps its C stack pointer in (it grows down). */
    ___stack_pointer?: WebAssembly.Global;
    _PostgresMainLongJmp?: () => void;
  };
  execProtocolRawSync?: (message: Uint8Array) => Uint8Array;
}

/**
 * Gives the C stack back when a statement fails on an embedded database (PGlite 0.5.8), as a native backend's longjmp
 * does. Returns false, changing nothing, when the instance lacks the internals it knows (another PGlite version).
 *
 * Why: PostgreSQL reports an ERROR by a longjmp to its main loop. In PGlite's WebAssembly build that longjmp is a
 * JavaScript exception thrown out of the backend, which PGlite's `execProtocolRawSync` catches around
 * `_PostgresMainLoopOnce()` before running the backend's error recovery (`_PostgresMainLongJmp()`). WebAssembly
 * unwinds its own frames, but the C stack lives in linear memory behind the `__stack_pointer` global, which only
 * the functions' epilogues move back up; Emscripten's own `invoke_*` wrappers save it before such a call and restore
 * it in their catch, PGlite's catch does not. So every failed statement left the stack pointer as deep as the
 * frames it had open when the error left the backend (~700 B for a unique violation, ~1.1 KB for a float8 overflow
 * or a timestamp out of range, ~5.6 KB for a syntax error, whatever the path), until `check_stack_depth()`
 * found the 2 MB of `max_stack_depth` used and every later statement, `SELECT 1` included, failed with "stack depth
 * limit exceeded" for the life of the process (after ~370 syntax errors, ~1,870 overflows, ~2,980 unique violations).
 * Nothing at the SQL level gives it back: not a sync, ROLLBACK, DISCARD ALL, nor any successful statement.
 *
 * The fix is the longjmp's own semantics: the stack pointer goes back to where it was when the backend was entered
 * (no C frame of that call is live once it unwinds) before the error recovery runs, and again when the call
 * returns, whatever it threw.
 */
export function unwindOnError(pglite: PGlite): boolean {
  const backend = pglite as unknown as PgliteBackend;
  const { mod } = backend;
  const sp = mod?.___stack_pointer;
  const run = backend.execProtocolRawSync;
  const recover = mod?._PostgresMainLongJmp;
  if (!(sp instanceof WebAssembly.Global) || typeof run !== 'function' || typeof recover !== 'function') return false;
  let entered = sp.value as number;
  backend.execProtocolRawSync = function (this: PGlite, message: Uint8Array) {
    const before = sp.value as number;
    entered = before;
    try {
      return run.call(this, message);
    } finally {
      sp.value = before;
    }
  };
  // Emscripten's export is a stub that replaces itself on the module at its first call (`Module._f = wasmExports.f`):
  // an accessor keeps this hook in front of whatever the module puts there.
  let target = recover;
  const hooked = () => {
    sp.value = entered;
    return target();
  };
  Object.defineProperty(mod, '_PostgresMainLongJmp', {
    configurable: true,
    enumerable: true,
    get: () => hooked,
    set: (f: () => void) => { target = f; },
  });
  return true;
}
