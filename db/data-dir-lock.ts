import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * An exclusive lock on an embedded (PGlite) data directory: PGlite has no
 * postmaster of its own, so two processes on one directory would both write and lose acknowledged
 * data. The lock is a file next to the directory (`<dir>.lock`) created with O_EXCL, holding the
 * owner's pid, host, process start time and command. A lock whose process is gone (killed -9, host
 * rebooted) is stale and taken over, with a warning; a live one is a refusal naming its holder.
 */
export interface LockHolder { pid: number; host: string; startedAt: string; procStart: string | null; command: string }

export class DataDirLockedError extends Error {
  constructor(readonly dir: string, readonly holder: LockHolder) {
    super(`the data directory ${dir} is in use by process ${holder.pid} on ${holder.host} ` +
      `(\`${holder.command}\`, started ${holder.startedAt}); stop that process first, or use another --data-dir`);
    this.name = 'DataDirLockedError';
  }
}

export interface DataDirLock { file: string; release(): void }

export const lockFileOf = (dir: string) => `${path.resolve(dir)}.lock`;

/** Linux: the start time of a process in clock ticks since boot (/proc/<pid>/stat field 22); tells a reused pid apart. */
function procStart(pid: number): string | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'; // exists, owned by another user
  }
}

function readHolder(file: string): LockHolder | null {
  try {
    const h = JSON.parse(fs.readFileSync(file, 'utf8'));
    return Number.isInteger(h?.pid) && typeof h.host === 'string' ? h : null;
  } catch {
    return null;
  }
}

/** Why a lock is stale, or null when its holder may still be running. */
export function staleReason(h: LockHolder | null): string | null {
  if (!h) return 'the lock file is unreadable';
  if (h.host !== os.hostname()) return null; // another host's pid cannot be checked: assume it runs
  if (!alive(h.pid)) return `process ${h.pid} is no longer running`;
  const started = procStart(h.pid);
  if (h.procStart && started && started !== h.procStart) return `pid ${h.pid} now belongs to another process`;
  return null;
}

/**
 * Creates the lock file complete or not at all: written aside, then hard-linked into place (link
 * fails if the name exists), so another process never reads a half-written lock and takes it for
 * stale. False when the lock exists.
 */
function create(file: string, me: LockHolder): boolean {
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(me) + '\n', { mode: 0o644 });
  try {
    fs.linkSync(tmp, file);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  } finally {
    fs.rmSync(tmp, { force: true });
  }
}

/**
 * Moves the stale lock aside (rename is atomic). If what was moved is not the lock judged stale,
 * another process took over in between and holds a fresh lock: it is put back.
 */
function removeStale(file: string, stale: LockHolder | null): void {
  const aside = `${file}.stale-${process.pid}`;
  try { fs.renameSync(file, aside); } catch { return; /* already moved by another process */ }
  const moved = readHolder(aside);
  if (moved && (moved.pid !== stale?.pid || moved.startedAt !== stale?.startedAt)) {
    try { fs.linkSync(aside, file); } catch { /* a third process holds it now */ }
  }
  fs.rmSync(aside, { force: true });
}

/**
 * Takes the lock or throws DataDirLockedError. `warn` hears about a stale lock taken over.
 * The lock is released by release(), and on process exit if release() was never called.
 */
export function acquireDataDirLock(dir: string, warn: (msg: string) => void = () => {}): DataDirLock {
  const file = lockFileOf(dir);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const me: LockHolder = {
    pid: process.pid, host: os.hostname(), startedAt: new Date().toISOString(), procStart: procStart(process.pid),
    command: ['drivewire', ...process.argv.slice(2)].join(' ').slice(0, 200),
  };
  for (let attempt = 0; ; attempt++) {
    if (create(file, me)) break;
    const holder = readHolder(file);
    const stale = staleReason(holder);
    if (!stale || attempt >= 3) throw new DataDirLockedError(dir, holder ?? { ...me, pid: -1, command: 'unknown' });
    warn(`taking over the stale lock ${file} (${stale}; it was held by pid ${holder?.pid ?? '?'} since ${holder?.startedAt ?? '?'})`);
    removeStale(file, holder);
  }
  const onExit = () => release();
  process.once('exit', onExit);
  function release() {
    process.off('exit', onExit);
    if (readHolder(file)?.pid === process.pid) fs.rmSync(file, { force: true });
  }
  return { file, release };
}
