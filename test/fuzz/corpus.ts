import fs from 'node:fs';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type { FuzzRequest } from './requests.js';
import { stringifyDeep } from './json.js';

/**
 * Regression cases: every failure the fuzzer finds is written here as JSON (commit them), and every
 * run replays them all before generating anything new.
 */
export const CORPUS_DIR = fileURLToPath(new URL('./corpus/', import.meta.url));

export interface CorpusCase {
  /** What was wrong when it was found, and how it was found (seed and path of the fast-check run). */
  problem: string;
  found: { seed: number; path: string; runs: number; date: string };
  /** A hostile-class case: replayed unless FUZZ_HOSTILE=0. */
  hostile: boolean;
  request: FuzzRequest;
}

export function loadCorpus(): { file: string; case: CorpusCase }[] {
  if (!fs.existsSync(CORPUS_DIR)) return [];
  return fs.readdirSync(CORPUS_DIR).filter((f) => f.endsWith('.json')).sort()
    .map((file) => ({ file, case: JSON.parse(fs.readFileSync(path.join(CORPUS_DIR, file), 'utf8')) as CorpusCase }));
}

/** Saves `c` under a name made of its operation and a hash of the request; returns the file path. */
export function saveCase(c: CorpusCase): string {
  fs.mkdirSync(CORPUS_DIR, { recursive: true });
  const slug = c.request.op.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '');
  const hash = createHash('sha256').update(stringifyDeep(c.request)).digest('hex').slice(0, 10);
  const file = path.join(CORPUS_DIR, `${slug}-${hash}.json`);
  // Indented for review, but a hostile case nested thousands of levels stays on one line.
  const text = stringifyDeep(c);
  fs.writeFileSync(file, `${text.length < 20_000 ? JSON.stringify(c, null, 2) : text}\n`);
  return file;
}
