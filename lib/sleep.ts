/** Resolves at the wall-clock time `at` (ms), or at once when the signal aborts. */
export function sleepUntil(at: number, signal: AbortSignal): Promise<void> {
  const ms = at - Date.now();
  if (ms <= 0 || signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(finish, ms);
    function finish() {
      clearTimeout(timer);
      signal.removeEventListener('abort', finish);
      resolve();
    }
    signal.addEventListener('abort', finish, { once: true });
  });
}
