/**
 * For tests of two connections racing: whether `p` is still pending after `ms` (it waits, on a lock, for the other
 * connection's transaction).
 */
export function stillPending(p: PromiseLike<unknown>, ms = 300): Promise<boolean> {
  return Promise.race([Promise.resolve(p).then(() => false, () => false), new Promise<boolean>((r) => setTimeout(r, ms, true))]);
}

/** A query builder started once: knex runs a builder again at every `then`, so awaiting it twice would run it twice. */
export function started<T>(query: PromiseLike<T>): Promise<T> {
  return Promise.resolve(query);
}
