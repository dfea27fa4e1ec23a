import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { copyPgliteTemplate } from '../helpers/db.js';
import { embeddedDbDir } from '../../lib/config.js';

/** One process at a time on an embedded (PGlite) data directory: two would corrupt it. */
const bin = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../bin/drivewire.js');
const dirs: string[] = [];
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});
const tmpDir = () => { const d = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-lock-')); dirs.push(d); return d; };

/** The real `drivewire serve`, resolved once it says it is running. */
function serve(dataDir: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, [bin, 'serve', '--data-dir', dataDir, '--http-port', '0', '--mqtt-port', '0',
    '--host', '127.0.0.1', '--log-level', 'silent'], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let out = '';
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (c) => { out += c; if (out.includes('drivewire is running')) resolve(child); });
    child.stderr!.on('data', (c) => { out += c; });
    child.once('exit', (code) => reject(new Error(`serve exited with ${code}: ${out}`)));
  });
}

const exited = (child: ChildProcess) => new Promise<number | null>((r) => (child.exitCode !== null ? r(child.exitCode) : child.once('exit', r)));

// The lock belongs to the embedded database: it runs in the PGlite pass of the suite, where the migrated
// template makes a real `serve` start in seconds (the PostgreSQL pass has no PGlite template to seed from).
describe.skipIf(Boolean(process.env.TEST_DATABASE_URL))('embedded data directory lock', () => {
  /** Shared: the second case then only opens a migrated directory (PGlite start-up is the slow part). */
  const dataDir = tmpDir();

  it('refuses a second serve or migrate on a data directory in use, naming the process that holds it, and frees it on stop', async () => {
    copyPgliteTemplate(embeddedDbDir(dataDir));
    const first = await serve(dataDir);
    const lockFile = path.join(dataDir, 'pgdata.lock');
    expect(JSON.parse(fs.readFileSync(lockFile, 'utf8'))).toMatchObject({ pid: first.pid, host: os.hostname() });

    const migrate = await runCli(['migrate', '--data-dir', dataDir]);
    expect(migrate.code).toBe(1);
    expect(migrate.stderr).toContain(`is in use by process ${first.pid} on ${os.hostname()}`);
    expect(migrate.stderr).toContain('drivewire serve');
    const second = await runCli(['serve', '--data-dir', dataDir, '--http-port', '0', '--mqtt-port', '0', '--host', '127.0.0.1', '--log-level', 'silent']);
    expect(second.code).toBe(1);
    expect(second.stderr).toContain(`is in use by process ${first.pid}`);
    expect(first.exitCode).toBeNull(); // the holder runs on

    first.kill('SIGTERM');
    expect(await exited(first)).toBe(0);
    expect(fs.existsSync(lockFile)).toBe(false);

    // A lock held from another host (a shared volume) cannot be checked there: it is respected.
    fs.writeFileSync(lockFile, JSON.stringify({ pid: 4242, host: 'other-host', startedAt: '2026-01-01T00:00:00.000Z', procStart: null, command: 'drivewire serve' }));
    const remote = await runCli(['migrate', '--data-dir', dataDir]);
    expect(remote.code).toBe(1);
    expect(remote.stderr).toContain('is in use by process 4242 on other-host');
    fs.rmSync(lockFile);
  }, 120_000);

  it('takes over a stale lock left by a process that no longer runs, and says so', async () => {
    const gone = spawn(process.execPath, ['-e', '0']);
    await exited(gone);
    const lockFile = path.join(dataDir, 'pgdata.lock');
    fs.writeFileSync(lockFile, JSON.stringify({
      pid: gone.pid, host: os.hostname(), startedAt: '2026-01-01T00:00:00.000Z', procStart: null, command: 'drivewire serve',
    }));
    const res = await runCli(['migrate', '--data-dir', dataDir]);
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(/Applied: |Already up to date/);
    expect(res.stderr).toContain(`taking over the stale lock ${lockFile} (process ${gone.pid} is no longer running`);
    expect(fs.existsSync(lockFile)).toBe(false);

    // A live pid that is not the process which wrote the lock (pid reused after a reboot) is stale too.
    fs.writeFileSync(lockFile, JSON.stringify({
      pid: process.pid, host: os.hostname(), startedAt: '2026-01-01T00:00:00.000Z', procStart: '1', command: 'drivewire serve',
    }));
    const reused = await runCli(['migrate', '--data-dir', dataDir]);
    expect(reused.code).toBe(0);
    expect(reused.stderr).toContain(`(pid ${process.pid} now belongs to another process;`);
    expect(fs.existsSync(lockFile)).toBe(false);
  }, 120_000);
});
