// Results kept between runs: each scenario's JSON object appended as one line to
// bench/results/<scenario>.jsonl, so figures can be compared across commits and machines (each
// line carries its versions and machine). The folder's .gitignore keeps the files out of git.
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';

const RESULTS = new URL('./results/', import.meta.url);

/** Appends the result; returns the file's path. */
export function appendResult(scenario: string, result: Record<string, unknown>): string {
  fs.mkdirSync(RESULTS, { recursive: true });
  const file = fileURLToPath(new URL(`${scenario}.jsonl`, RESULTS));
  fs.appendFileSync(file, `${JSON.stringify({ at: new Date().toISOString(), ...result })}\n`);
  return file;
}
