// Bench child processes (the connections scenario's load and bare Aedes, the webhooks scenario's receiver): a
// process of their own, so their CPU and memory stay out of the figures they serve as baselines or peers for.
import { fork, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { apiUrlOf } from '../bin/commands/serve.js';
import { procCpu } from './processes.js';

/** The `drivewire` launcher (bin/drivewire.js; the build's dist/bin/drivewire.js links to it). */
export const LAUNCHER = fileURLToPath(new URL('../bin/drivewire.js', import.meta.url));

/**
 * The command that runs `script` as the launcher runs the CLI: its shebang's own command line (`/usr/bin/env -S
 * "<environment> node <flags>"`), so a baseline gets the same memory settings without a copy of them.
 */
export function launchedLike(script: string, args: string[]): { command: string; args: string[] } {
  const [env, split, ...rest] = fs.readFileSync(LAUNCHER, 'utf8').split('\n')[0].slice(2).split(' ');
  return { command: env, args: [split, rest.join(' '), script, ...args] };
}

/** What a child says once it is ready: where it serves, for those that serve. */
export interface ChildReady { type: 'ready'; url?: string }

/** A bench child process answering one message type per request over IPC. */
export async function startChild(file: string, execArgv: string[] = [], args: string[] = []) {
  const child: ChildProcess = fork(fileURLToPath(new URL(file, import.meta.url)), args, { execArgv, serialization: 'advanced', stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  const exited = new Promise<never>((_, reject) => child.once('exit', (code) => reject(new Error(`${file} exited with code ${code}`))));
  exited.catch(() => undefined);
  const answer = <T>(type: string) => Promise.race([exited, new Promise<T>((resolve) => {
    const on = (m: { type: string }) => { if (m.type === type) { child.off('message', on); resolve(m as T); } };
    child.on('message', on);
  })]);
  const ready = await answer<ChildReady>('ready');
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

/**
 * The API alone in a process of its own (`drivewire serve --only api`, the scale-out layout of
 * docs/operations/scale-out.md) on the bench's database, while the bench process keeps the gateway: requests no longer
 * wait behind the ingest on one event loop. `asLaunched`: with the launcher's own memory settings (launchedLike), as
 * `drivewire serve` runs, for figures of the process's memory.
 */
export async function startApiProcess(databaseUrl: string, o: { asLaunched?: boolean } = {}): Promise<{
  url: string; pid: number; cpu(): number | null; close(): Promise<void>;
}> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'drivewire-bench-api-'));
  const args = ['serve', '--only', 'api', '--database-url', databaseUrl, '--http-port', '0', '--host', '127.0.0.1', '--data-dir', dataDir,
    '--log-level', 'warn'];
  const command = o.asLaunched ? launchedLike(LAUNCHER, args) : { command: process.execPath, args: [LAUNCHER, ...args] };
  const child = spawn(command.command, command.args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const close = async () => {
    child.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
    if (child.exitCode === null) child.kill('SIGKILL');
    fs.rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    const url = await apiUrlOf(child, 60_000);
    const cpu = () => { const c = procCpu(`/proc/${child.pid}/stat`); return c && c.user + c.system; };
    return { url, pid: child.pid!, cpu, close };
  } catch (err) {
    await close();
    throw err;
  }
}
