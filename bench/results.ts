// Results kept between runs, two ways. bench/results/<scenario>.jsonl gets every run appended as one line, so figures
// can be compared across commits and machines; it stays out of git (bench/results/.gitignore). bench/results/
// <scenario>.json holds the latest run alone, pretty-printed, and is committed: it is the record the figures quoted in
// docs/development/performance.md come from. Each record says when, at which commit and on which machine it ran.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';

const RESULTS = new URL('./results/', import.meta.url);
const ROOT = fileURLToPath(new URL('../', import.meta.url));

/** The checked-out commit, `-dirty` when the work tree has changes; null outside a git checkout. */
export function benchCommit(cwd = ROOT): string | null {
  try {
    const git = (...args: string[]) => execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const commit = git('rev-parse', '--short=12', 'HEAD');
    return git('status', '--porcelain', '--untracked-files=no') ? `${commit}-dirty` : commit;
  } catch {
    return null;
  }
}

/** The record kept of a result: when and at which commit it ran, the result, and the machine's memory beside its cores. */
export function resultRecord(result: Record<string, unknown>, now = new Date(), commit = benchCommit()): Record<string, unknown> {
  const machine = typeof result.machine === 'object' && result.machine !== null
    ? { ...result.machine, memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10, os: `${os.type()} ${os.release()}` }
    : undefined;
  return { at: now.toISOString(), commit, ...result, ...(machine && { machine }) };
}

/**
 * Appends the result to bench/results/<scenario>.jsonl and writes it as bench/results/<scenario>.json (the latest
 * run of the scenario); returns the paths of both files.
 */
export function saveResult(scenario: string, result: Record<string, unknown>, dir: URL = RESULTS): { history: string; latest: string } {
  fs.mkdirSync(dir, { recursive: true });
  const record = resultRecord(result);
  const history = fileURLToPath(new URL(`${scenario}.jsonl`, dir));
  const latest = fileURLToPath(new URL(`${scenario}.json`, dir));
  fs.appendFileSync(history, `${JSON.stringify(record)}\n`);
  // Written beside and renamed over, so an interrupted run never leaves a half-written file in the repository.
  fs.writeFileSync(`${latest}.tmp`, `${JSON.stringify(record, null, 2)}\n`);
  fs.renameSync(`${latest}.tmp`, latest);
  return { history, latest };
}
