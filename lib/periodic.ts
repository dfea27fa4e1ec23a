/** A task the process repeats in the background (statistics, the announced API URL, the silent-trip sweep). */
export interface Periodic {
  /**
   * No run starts after this; resolves once the run in progress, if any, has ended: the caller may then close the
   * database pool (a query queued on a closing pool is aborted).
   */
  stop(): Promise<void>;
}

/**
 * Runs `task` every `ms` ms, one run at a time (a tick while a run is in progress is skipped); the timer does not keep
 * the process alive. The task reports its own errors (a rejection is dropped); `stopped()` lets a task of several
 * steps end between them once stop() was called.
 */
export function every(ms: number, task: (stopped: () => boolean) => Promise<void>): Periodic {
  let running: Promise<void> | null = null;
  let stopped = false;
  const timer = setInterval(() => {
    if (running || stopped) return;
    running = task(() => stopped).catch(() => undefined).finally(() => { running = null; });
  }, ms);
  timer.unref();
  return { stop: async () => { stopped = true; clearInterval(timer); await running; } };
}
