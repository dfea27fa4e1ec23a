import { AsyncLocalStorage } from 'node:async_hooks';
import type { Knex } from 'knex';

/**
 * A bound on how long work may wait for a pooled connection, set per caller: an API
 * request gives up after a few seconds and is answered 503, /health after under a second, while the
 * gateway and the workers, which run outside any bound, keep knex's own wait (60 s) so a busy pool
 * delays ingest rather than failing good frames. The pool is shared, so the bound is carried by
 * AsyncLocalStorage rather than by a second pool (PGlite has a single connection).
 */
const bound = new AsyncLocalStorage<AcquireLimit>();

/** `ms` 0 = no bound: set when the bounded work is over, so timers and tasks it started wait like any other caller. */
export interface AcquireLimit { ms: number; what: string }

/** No connection came free within the caller's bound; `what` names the waiting work. */
export class PoolBusyError extends Error {
  constructor(readonly waitedMs: number, readonly what: string) {
    super(`${what}: no database connection came free within ${waitedMs} ms (the database is busy)`);
    this.name = 'PoolBusyError';
  }
}

/** Runs `fn` with every connection acquisition inside it (and in what it starts) bounded by `limit.ms`. */
export function withAcquireLimit<T>(limit: AcquireLimit, fn: () => T): T {
  return bound.run(limit, fn);
}

/** Bounded work in flight (boundedWork), in the whole process. */
let inFlight = 0;

/**
 * Marks bounded work (an API request, a health probe) as begun; the function returned marks it ended, once. While
 * none is in flight the bound's async context is switched off, and contexts left from ended work lose their limit
 * (it was over: their `ms` is 0). Once switched on, Node 20 runs a hook for every promise of the process, a sizeable
 * share of the gateway's main thread in a process whose API had served one request (docs/development/performance.md).
 * withAcquireLimit switches it on again.
 */
export function boundedWork(): () => void {
  inFlight++;
  let ended = false;
  return () => {
    if (ended) return;
    ended = true;
    if (--inFlight === 0) bound.disable();
  };
}

/** Bounded work in flight now (tests). */
export const boundedWorkInFlight = (): number => inFlight;

interface PendingAcquire { promise: Promise<unknown>; abort(): void }
interface Pool { acquire(): PendingAcquire; release(resource: unknown): boolean }
type Client = { pool?: Pool; acquireConnection(): Promise<unknown> };

/** Makes `knex` honour withAcquireLimit; calls outside any limit acquire as before. */
export function installAcquireLimit(knex: Knex): void {
  const client = knex.client as unknown as Client;
  const original = client.acquireConnection.bind(client);
  client.acquireConnection = function acquireConnection() {
    const limit = bound.getStore();
    if (!limit?.ms || !client.pool) return original();
    return acquireWithin(client.pool, limit.ms, limit.what);
  };
}

async function acquireWithin(pool: Pool, ms: number, what: string): Promise<unknown> {
  const pending = pool.acquire();
  let timedOut = false;
  // abort() takes the request out of the pool's queue, so waiters that gave up do not pile up.
  const timer = setTimeout(() => { timedOut = true; pending.abort(); }, ms);
  try {
    const connection = await pending.promise;
    if (timedOut) { pool.release(connection); throw new PoolBusyError(ms, what); }
    return connection;
  } catch (err) {
    if (timedOut) throw new PoolBusyError(ms, what);
    throw err;
  } finally {
    clearTimeout(timer);
  }
}
