// Where a scenario's CPU and memory go: the bench process (the platform), the load
// generator and the PostgreSQL server, each over the scenario's measured window, so a figure that
// moves can be put down to one of them. Marks taken at the window's edges; figures between two marks.
import fs from 'node:fs';
import pg from 'pg';

/** CPU seconds. */
export interface Cpu { user: number; system: number }

/** USER_HZ: /proc reports CPU times in hundredths of a second on every Linux architecture. */
const TICKS = 100;

/** utime and stime (s) of a /proc/…/stat file; null when unreadable (not Linux, the pid gone or in another namespace). */
export function procCpu(file: string): Cpu | null {
  try {
    const text = fs.readFileSync(file, 'utf8');
    const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { user: Number(f[11]) / TICKS, system: Number(f[12]) / TICKS };
  } catch {
    return null;
  }
}

const r3 = (x: number) => Math.round(x * 1000) / 1000;
const cpuOf = (u: NodeJS.CpuUsage): Cpu => ({ user: u.user / 1e6, system: u.system / 1e6 });
const minus = (b: Cpu, a: Cpu): Cpu => ({ user: b.user - a.user, system: b.system - a.system });

/** The load generator's share, as the scenario knows it. */
export type LoadGeneratorFigures =
  /** Its own worker thread of the bench process: the thread's CPU from /proc/thread-self/stat (Node 20 has no per-thread CPU API). */
  | { where: 'worker thread'; cpuUserSeconds: number | null; cpuSystemSeconds: number | null; eventLoopUtilization: number | null; reason?: string }
  /** A child process: its own process.cpuUsage() and peak RSS. */
  | { where: 'child process'; cpuUserSeconds: number; cpuSystemSeconds: number; peakRssBytes: number }
  /** Not separable (autocannon's worker thread): its CPU is in the bench process's. */
  | { where: string; cpuUserSeconds: null; cpuSystemSeconds: null; reason: string };

export interface ProcessFigures {
  windowSeconds: number;
  platform: {
    /** What the bench process holds (its CPU and RSS are the whole process's): the platform, and maybe PGlite and the load generator. */
    includes: string[];
    /** process.cpuUsage() over the window: every thread of the bench process. */
    cpuUserSeconds: number;
    cpuSystemSeconds: number;
    /** The above minus the load generator's thread when it runs in the bench process and its CPU is known; else null. */
    cpuSecondsWithoutLoadGenerator: number | null;
    /** The platform's event-loop thread alone (/proc/thread-self/stat, 10 ms resolution); null off Linux. */
    eventLoopThreadCpuSeconds: number | null;
    /** Largest RSS sampled every 100 ms over the window (and at its edges). */
    peakRssBytes: number;
    /** process.resourceUsage().maxRSS: the peak since the process started (it cannot be reset per window). */
    maxRssSinceStartBytes: number;
  };
  loadGenerator: LoadGeneratorFigures | null;
  /**
   * The PostgreSQL processes serving the bench: backends of the bench database (pids from pg_stat_activity,
   * sampled every 500 ms and at the marks), utime + stime from /proc/<pid>/stat. The server's background
   * processes (WAL writer, checkpointer, …) are shared by every database on the server: apart.
   * Null figures with a reason on PGlite (in the bench process) or when the server is not on this machine.
   */
  postgres: {
    backends: number;
    cpuUserSeconds: number;
    cpuSystemSeconds: number;
    serverBackgroundCpuSeconds: number;
  } | { cpuUserSeconds: null; cpuSystemSeconds: null; reason: string };
}

export interface Mark {
  at: number;
  cpu: Cpu;
  thread: Cpu | null;
}

export interface ProcessMonitor {
  mark(): Promise<Mark>;
  figures(a: Mark, b: Mark, loadGenerator?: LoadGeneratorFigures | null): ProcessFigures;
  close(): Promise<void>;
}

interface Reading { at: number; cpu: Cpu }
interface Backend { ours: boolean; startedAt: number; readings: Reading[] }

/**
 * PostgreSQL backends' CPU, read from /proc when the server runs on this machine (checked: this
 * monitor's own backend pid must be a local `postgres` process); otherwise the reason it cannot be.
 */
async function postgresSampler(databaseUrl: string) {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const { rows: [{ pid: self }] } = await client.query('SELECT pg_backend_pid() AS pid');
  let comm = '';
  try { comm = fs.readFileSync(`/proc/${self}/comm`, 'utf8').trim(); } catch { /* not local, or no /proc */ }
  if (comm !== 'postgres') {
    await client.end();
    return { reason: `the PostgreSQL server is not on this machine or /proc is unreadable (backend pid ${self} is not a local postgres process)` };
  }
  const backends = new Map<number, Backend>();
  let sampling: Promise<void> | null = null;
  const sample = (): Promise<void> => sampling ??= (async () => {
    try {
      const at = Date.now();
      const { rows } = await client.query(`SELECT pid, backend_start, datname = current_database() AS ours FROM pg_stat_activity
        WHERE (datname = current_database() OR datname IS NULL) AND pid <> pg_backend_pid()`);
      for (const r of rows) {
        const cpu = procCpu(`/proc/${r.pid}/stat`);
        if (!cpu) continue;
        let b = backends.get(r.pid);
        if (!b) backends.set(r.pid, b = { ours: r.ours === true, startedAt: r.backend_start ? new Date(r.backend_start).getTime() : 0, readings: [] });
        b.readings.push({ at, cpu });
      }
    } finally {
      sampling = null;
    }
  })();
  const timer = setInterval(() => { sample().catch(() => undefined); }, 500);
  timer.unref();
  return {
    sample,
    /** CPU of each kind of process between two times: a backend that started after `from` counts from zero. */
    between(from: number, to: number) {
      const sum = { ours: { user: 0, system: 0 }, background: { user: 0, system: 0 }, backends: 0 };
      for (const b of backends.values()) {
        const upTo = b.readings.filter((r) => r.at <= to);
        if (!upTo.length || upTo[upTo.length - 1].at < from) continue;
        const before = upTo.filter((r) => r.at <= from);
        const base = before.length ? before[before.length - 1].cpu
          : b.startedAt >= from ? { user: 0, system: 0 } : upTo.find((r) => r.at >= from)!.cpu;
        const d = minus(upTo[upTo.length - 1].cpu, base);
        const into = b.ours ? sum.ours : sum.background;
        into.user += d.user;
        into.system += d.system;
        if (b.ours) sum.backends++;
      }
      return sum;
    },
    async close() { clearInterval(timer); await sampling?.catch(() => undefined); await client.end(); },
  };
}

/** Starts sampling the bench process's RSS (and PostgreSQL's backends, on a local server). */
export async function startProcessMonitor(o: { databaseUrl: string | null }): Promise<ProcessMonitor> {
  const rss: { at: number; bytes: number }[] = [];
  const note = () => rss.push({ at: Date.now(), bytes: process.memoryUsage.rss() });
  const timer = setInterval(note, 100);
  timer.unref();
  const pgSampler = o.databaseUrl ? await postgresSampler(o.databaseUrl).catch((err: Error) => ({ reason: `cannot read the server's processes: ${err.message}` })) : null;
  const postgres = pgSampler && 'sample' in pgSampler ? pgSampler : null;
  const pgReason: string = !o.databaseUrl ? 'embedded PGlite: it runs inside the bench process, its CPU and memory are the platform\'s'
    : pgSampler && 'reason' in pgSampler ? pgSampler.reason ?? '' : '';
  return {
    async mark() {
      const m = { at: Date.now(), cpu: cpuOf(process.cpuUsage()), thread: procCpu('/proc/thread-self/stat') };
      note();
      await postgres?.sample().catch(() => undefined);
      return m;
    },
    figures(a, b, loadGenerator = null): ProcessFigures {
      const cpu = minus(b.cpu, a.cpu);
      const thread = a.thread && b.thread ? minus(b.thread, a.thread) : null;
      const inProcess = loadGenerator?.where === 'worker thread' && loadGenerator.cpuUserSeconds !== null && loadGenerator.cpuSystemSeconds !== null;
      const pgCpu = postgres?.between(a.at, b.at);
      return {
        windowSeconds: r3((b.at - a.at) / 1000),
        platform: {
          includes: ['platform', ...(o.databaseUrl ? [] : ['embedded PGlite']),
            ...(loadGenerator && loadGenerator.where !== 'child process' ? [`load generator (${loadGenerator.where})`] : [])],
          cpuUserSeconds: r3(cpu.user),
          cpuSystemSeconds: r3(cpu.system),
          cpuSecondsWithoutLoadGenerator: inProcess
            ? r3(Math.max(0, cpu.user + cpu.system - loadGenerator.cpuUserSeconds! - loadGenerator.cpuSystemSeconds!)) : null,
          eventLoopThreadCpuSeconds: thread && r3(thread.user + thread.system),
          peakRssBytes: Math.max(0, ...rss.filter((s) => s.at >= a.at && s.at <= b.at).map((s) => s.bytes)),
          maxRssSinceStartBytes: process.resourceUsage().maxRSS * 1024,
        },
        loadGenerator,
        postgres: pgCpu ? {
          backends: pgCpu.backends,
          cpuUserSeconds: r3(pgCpu.ours.user), cpuSystemSeconds: r3(pgCpu.ours.system),
          serverBackgroundCpuSeconds: r3(pgCpu.background.user + pgCpu.background.system),
        } : { cpuUserSeconds: null, cpuSystemSeconds: null, reason: pgReason },
      };
    },
    async close() {
      clearInterval(timer);
      await postgres?.close();
    },
  };
}

/** The load generator's figures from a worker thread's own report (load.worker.js, knee.worker.js). */
export function workerThreadFigures(thread: { cpu: Cpu | null; eventLoopUtilization: number | null } | null | undefined): LoadGeneratorFigures {
  const cpu = thread?.cpu ?? null;
  return {
    where: 'worker thread',
    cpuUserSeconds: cpu && r3(cpu.user), cpuSystemSeconds: cpu && r3(cpu.system),
    eventLoopUtilization: thread?.eventLoopUtilization == null ? null : r3(thread.eventLoopUtilization),
    ...(cpu ? {} : { reason: '/proc/thread-self/stat unreadable (not Linux): its CPU is in the platform\'s' }),
  };
}
