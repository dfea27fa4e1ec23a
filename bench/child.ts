// Bench child processes (the connections scenario's load and bare Aedes, the webhooks scenario's receiver): a
// process of their own, so their CPU and memory stay out of the figures they serve as baselines or peers for.
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** A bench child process answering one message type per request over IPC. */
export async function startChild(file: string, execArgv: string[] = [], args: string[] = []) {
  const child: ChildProcess = fork(fileURLToPath(new URL(file, import.meta.url)), args, { execArgv, serialization: 'advanced', stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  const exited = new Promise<never>((_, reject) => child.once('exit', (code) => reject(new Error(`${file} exited with code ${code}`))));
  exited.catch(() => undefined);
  const answer = <T>(type: string) => Promise.race([exited, new Promise<T>((resolve) => {
    const on = (m: { type: string }) => { if (m.type === type) { child.off('message', on); resolve(m as T); } };
    child.on('message', on);
  })]);
  const ready = await answer<Record<string, any>>('ready');
  return {
    ready,
    ask<T>(message: Record<string, unknown>, type = String(message.type)): Promise<T> {
      const a = answer<T>(type);
      child.send(message);
      return a;
    },
    async close() {
      if (child.exitCode !== null) return;
      const gone = new Promise((resolve) => child.once('exit', resolve));
      child.send({ type: 'close' });
      await gone;
    },
  };
}

/** A child's answer, or null once `ms` passed without it (a drain's bound). */
export async function within<T>(answer: Promise<T>, ms: number): Promise<T | null> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([answer, new Promise<null>((r) => { timer = setTimeout(r, ms, null); })]);
  } finally {
    clearTimeout(timer);
  }
}
