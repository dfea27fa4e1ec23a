// Gives glibc's free heap memory back to the system while the process is idle (the embedded platform's idle RSS).
// The start leaves a large amount of freed but unreturned malloc memory: V8 compiling PGlite's and PostGIS's
// WebAssembly on its worker threads, and parsing the platform's modules on the main thread, free their working memory
// between blocks that stay, and glibc returns only the free top of a heap, never the holes below a live block;
// `malloc_trim(0)` returns those too (docs/development/performance.md). Node has no binding for it; koffi (an optional
// dependency, prebuilt for each platform) calls it. Where there is no glibc (musl, macOS) or no koffi, nothing is
// trimmed and nothing else changes.
import { performance } from 'node:perf_hooks';
import { every, type Periodic } from './periodic.js';

/** `malloc_trim(0)`, or null where it cannot be called. */
export async function loadMallocTrim(): Promise<(() => boolean) | null> {
  if (process.platform !== 'linux') return null;
  try {
    const { default: koffi } = await import('koffi');
    const trim = koffi.load('libc.so.6').func('int malloc_trim(size_t pad)') as (pad: number) => number;
    return () => trim(0) === 1;
  } catch {
    return null;
  }
}

/** Busy share of the event loop under which an interval counts as idle. */
const IDLE_UTILIZATION = 0.2;

/**
 * Trims the heap now (the caller has just finished starting, and the start freed the most), then every `ms` ms when
 * the event loop was idle over the interval (a trim while frames stream in would only hand back pages the next batch
 * faults in again; a trim of the idle platform takes well under a millisecond). Null where trimming is not available.
 */
export async function trimWhenIdle(ms: number): Promise<Periodic | null> {
  const trim = await loadMallocTrim();
  if (!trim) return null;
  trim();
  let last = performance.eventLoopUtilization();
  return every(ms, async () => {
    const now = performance.eventLoopUtilization();
    const busy = performance.eventLoopUtilization(now, last).utilization;
    last = now;
    if (busy < IDLE_UTILIZATION) trim();
  });
}
