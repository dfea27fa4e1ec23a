import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { benchCommit, resultRecord, saveResult } from '../../bench/results.js';

const dirs: string[] = [];
afterEach(() => { for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true }); });
const tempDir = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-bench-results-'));
  dirs.push(dir);
  return dir;
};

describe('bench results', () => {
  it('appends every run to <scenario>.jsonl and keeps the latest alone, pretty-printed, in <scenario>.json', () => {
    const dir = tempDir();
    const at = pathToFileURL(`${dir}/`);
    saveResult('ingest', { framesPerSecond: 100, machine: { cpus: 2 } }, at);
    const { history, latest } = saveResult('ingest', { framesPerSecond: 200, machine: { cpus: 2 } }, at);
    expect(history).toBe(path.join(dir, 'ingest.jsonl'));
    expect(latest).toBe(path.join(dir, 'ingest.json'));
    const lines = fs.readFileSync(history, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    expect(lines.map((l) => l.framesPerSecond)).toEqual([100, 200]);
    const text = fs.readFileSync(latest, 'utf8');
    expect(text).toContain('\n  "framesPerSecond": 200,\n');
    expect(JSON.parse(text)).toEqual(lines[1]);
    expect(fs.readdirSync(dir).sort()).toEqual(['ingest.json', 'ingest.jsonl']);
  });

  it('records when, at which commit and on which machine (memory and system beside the cores) a result ran', () => {
    const record = resultRecord({ framesPerSecond: 1, machine: { cpus: 2, cpu: 'x' } }, new Date('2026-06-01T12:00:00Z'), 'abc123');
    expect(record).toMatchObject({ at: '2026-06-01T12:00:00.000Z', commit: 'abc123', framesPerSecond: 1, machine: { cpus: 2, cpu: 'x' } });
    const machine = record.machine as { memoryGiB: number; os: string };
    expect(machine.memoryGiB).toBeGreaterThan(0);
    expect(machine.os).toBe(`${os.type()} ${os.release()}`);
    expect(resultRecord({ framesPerSecond: 1 }, new Date(0), null)).toEqual({ at: '1970-01-01T00:00:00.000Z', commit: null, framesPerSecond: 1 });
  });

  it('names the checked-out commit, and none outside a git checkout', () => {
    expect(benchCommit()).toMatch(/^[0-9a-f]{12}(-dirty)?$/);
    expect(benchCommit(tempDir())).toBeNull();
  });
});
