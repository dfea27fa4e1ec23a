// Real `drivewire serve` child processes for the multi-process tests (test/e2e/scale-out.test.ts).
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const bin = path.resolve(here, '../../../bin/drivewire.js');
const clock = path.resolve(here, 'clock-offset.mjs');

export interface Served {
  proc: ChildProcess;
  dataDir: string;
  /** Everything the process printed on stdout so far. */
  stdout(): string;
  /** The base URL of its HTTP server (the API, or /health and /metrics). */
  http: string;
  /** Its MQTT URL (gateways). */
  mqtt: string | null;
  stop(): Promise<void>;
}

/** Starts `drivewire serve --only <parts>` on its own empty data dir and resolves once it printed its banner. */
export async function serve(only: string, args: string[], env: NodeJS.ProcessEnv = {}, timeoutMs = 120_000): Promise<Served> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `dw-scale-${only.replace(',', '-')}-`));
  const proc = spawn(process.execPath, ['--import', clock, bin, 'serve', '--only', only, '--data-dir', dataDir,
    '--http-port', '0', '--mqtt-port', '0', '--host', '127.0.0.1', '--log-level', 'warn', ...args], {
    env: { ...process.env, DRIVEWIRE_MQTT_HOST: '127.0.0.1', ...env }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  proc.stdout!.on('data', (c: Buffer) => { out += c.toString(); });
  proc.stderr!.on('data', (c: Buffer) => { err += c.toString(); });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => { proc.kill('SIGKILL'); reject(new Error(`${only} did not start in ${timeoutMs} ms:\n${out}\n${err}`)); }, timeoutMs);
    const check = () => { if (/\n {2}database {3}/.test(out)) { clearTimeout(timer); resolve(); } };
    proc.stdout!.on('data', check);
    proc.once('exit', (code) => { clearTimeout(timer); reject(new Error(`${only} exited with ${code}:\n${out}\n${err}`)); });
  });
  const http = /(?:API|health) +(http:\/\/[^/\s]+)/.exec(out)![1];
  const mqtt = /\n {2}mqtt +(mqtt:\/\/\S+)/.exec(out)?.[1] ?? null;
  return {
    proc, dataDir, http, mqtt, stdout: () => out,
    async stop() {
      if (proc.exitCode === null) {
        const exited = new Promise((r) => proc.once('exit', r));
        proc.kill('SIGTERM');
        await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
        if (proc.exitCode === null) proc.kill('SIGKILL');
      }
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
