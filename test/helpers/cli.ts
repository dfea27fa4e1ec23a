import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';

const bin = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../bin/drivewire.js');

/** What a run of the binary gave. */
export type CliResult = { code: number; stdout: string; stderr: string };

/** Runs the real `drivewire` binary; resolves with its exit code and output. */
export function runCli(args: string[], env: NodeJS.ProcessEnv = {}, timeoutMs = 60_000) {
  return new Promise<CliResult>((resolve) => {
    execFile(process.execPath, [bin, ...args], { env: { ...process.env, ...env }, timeout: timeoutMs }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

/** A success: exit code 0 and no `drivewire:` error line; its stdout. */
export const cliOk = (r: CliResult) => {
  expect(r.stderr.split('\n').filter((l) => l.startsWith('drivewire:'))).toEqual([]);
  expect(r.code).toBe(0);
  return r.stdout;
};

/** A failure: exit code 1 and exactly one line on stderr; that line. */
export const cliOneLine = (r: CliResult) => {
  expect(r.code).toBe(1);
  expect(r.stderr.trim().split('\n')).toHaveLength(1);
  return r.stderr.trim();
};
