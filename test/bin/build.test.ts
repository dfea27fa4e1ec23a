// The compiled build: `npm run build` turns the sources into JavaScript that starts the platform without
// tsx, and the launcher takes that build only while it is newer than every source.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFile, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { createTestDb } from '../helpers/db.js';
import { apiUrlOf } from '../../bin/commands/serve.js';
// @ts-expect-error: plain JavaScript, read by the launcher before tsx is loaded
import { BUILT_STAMP, SOURCE_DIRS, distIsFresh } from '../../bin/freshness.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const temp: string[] = [];
const closers: (() => Promise<void>)[] = [];
const tempDir = (prefix: string) => { const d = fs.mkdtempSync(path.join(os.tmpdir(), prefix)); temp.push(d); return d; };
afterAll(async () => {
  for (const close of closers) await close();
  for (const d of temp) fs.rmSync(d, { recursive: true, force: true });
});

describe('distIsFresh', () => {
  it('takes a build only while no source file (nor package.json) is newer than its stamp', () => {
    const root = tempDir('dw-fresh-');
    for (const dir of SOURCE_DIRS) fs.mkdirSync(path.join(root, dir), { recursive: true });
    fs.writeFileSync(path.join(root, 'lib', 'a.ts'), 'export {};');
    fs.writeFileSync(path.join(root, 'package.json'), '{}');
    expect(distIsFresh(root)).toBe(false); // no build
    const past = (s: number) => new Date(Date.now() - s * 1000);
    for (const f of ['lib/a.ts', 'package.json']) fs.utimesSync(path.join(root, f), past(60), past(60));
    fs.mkdirSync(path.join(root, 'dist'));
    fs.writeFileSync(path.join(root, 'dist', BUILT_STAMP), String(Date.now() - 30_000));
    expect(distIsFresh(root)).toBe(true);
    fs.utimesSync(path.join(root, 'lib', 'a.ts'), past(10), past(10)); // edited after the build
    expect(distIsFresh(root)).toBe(false);
    fs.writeFileSync(path.join(root, 'dist', BUILT_STAMP), String(Date.now() - 5_000));
    expect(distIsFresh(root)).toBe(true);
    fs.writeFileSync(path.join(root, 'gateway', 'new.ts'), 'export {};'); // a new file since
    fs.utimesSync(path.join(root, 'gateway', 'new.ts'), past(1), past(1));
    expect(distIsFresh(root)).toBe(false);
  });
});

describe('the compiled platform', { timeout: 120_000 }, () => {
  it('builds, then serves the API from dist/ without tsx', async () => {
    const out = path.join(tempDir('dw-build-'), 'dist');
    const built = await new Promise<string>((resolve, reject) => {
      execFile(process.execPath, [path.join(ROOT, 'bin', 'build.js'), '--out', out], (err, stdout) => (err ? reject(err) : resolve(stdout)));
    });
    expect(built).toMatch(/compiled \d+ modules/);
    expect(fs.existsSync(path.join(out, 'gateway', 'ingest.pipeline.js'))).toBe(true);
    expect(fs.existsSync(path.join(out, 'gateway', 'vin.worker.js'))).toBe(true);
    expect(fs.existsSync(path.join(out, 'routes-data'))).toBe(true);
    // the launcher, reached from compiled files (the api bench starts a process with it), is the project's own
    expect(fs.realpathSync(path.join(out, 'bin', 'drivewire.js'))).toBe(path.join(ROOT, 'bin', 'drivewire.js'));

    const dataDir = tempDir('dw-build-data-');
    // PostgreSQL where the suite has one; else the embedded database, what `npm start` runs on a fresh machine
    const db = process.env.TEST_DATABASE_URL ? await createTestDb() : null;
    if (db) closers.push(() => db.close());
    const child = spawn(process.execPath, [path.join(out, 'bin', 'cli.js'), 'serve', '--data-dir', dataDir, '--http-port', '0',
      '--mqtt-port', '0', '--host', '127.0.0.1', '--log-level', 'warn', ...(db?.url ? ['--database-url', db.url] : [])], { stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      const url = await apiUrlOf(child, 90_000);
      const health = await fetch(`${url}/health`);
      expect(health.status).toBe(200);
    } finally {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await new Promise((r) => child.once('exit', r));
      }
    }
  });
});
