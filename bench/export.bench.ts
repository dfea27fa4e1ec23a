// Export scenario: one device with a long history (--export-messages, made in SQL by generate.ts), exported as CSV
// over HTTP in one request. Reports the API process's RSS before, at its peak during and after the export (the
// streamed export is meant to hold a page or two, not the history: goal a rise of at most 50 MB), and the time.
// On PostgreSQL the API runs in a process of its own (serve --only api, with the launcher's memory settings), so its
// RSS is the API's alone; on the embedded database it is the bench process's, which also holds the gateway and PGlite.
import fs from 'node:fs';
import { performance } from 'node:perf_hooks';
import { generateMessages } from './generate.js';
import { startApiProcess } from './child.js';
import { machine, round, startBenchPlatform } from './harness.js';
import { benchScenario, type BenchOptions } from './types.js';

export const EXPORT_MESSAGES = 1_000_000;
/** The goal: the API's RSS may rise this much (MB) while it streams the export. */
export const RSS_RISE_GOAL_MB = 50;
const MB = 2 ** 20;
const DAYS = 30;

/** RSS of a process in bytes: /proc/<pid>/status VmRSS; null when unreadable. */
function rssOf(pid: number): number | null {
  try {
    const m = /^VmRSS:\s+(\d+) kB$/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}

/** Samples `read` every 50 ms until stopped; the peak and the last sample, bytes. */
function sampler(read: () => number | null) {
  let peak = 0;
  let last = 0;
  const take = () => { const v = read(); if (v !== null) { peak = Math.max(peak, v); last = v; } };
  take();
  const timer = setInterval(take, 50);
  return { stop: () => { clearInterval(timer); take(); return { peak, last }; } };
}

const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Reads the whole answer, counting bytes and CRLFs (a CSV's records; its values here hold none). */
async function readAll(res: Response) {
  const started = performance.now();
  let firstChunkMs: number | null = null;
  let bytes = 0;
  let records = 0;
  const reader = res.body!.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    firstChunkMs ??= performance.now() - started;
    bytes += value.length;
    for (let i = value.indexOf(10); i !== -1; i = value.indexOf(10, i + 1)) records++;
  }
  return { bytes, records, firstChunkMs: firstChunkMs ?? 0 };
}

async function run(o: BenchOptions) {
  const n = o.exportMessages ?? EXPORT_MESSAGES;
  const bench = await startBenchPlatform({ databaseUrl: o.databaseUrl });
  let api: Awaited<ReturnType<typeof startApiProcess>> | null = null;
  try {
    const [device] = await bench.devices(1);
    const { knex } = bench.platform.db;
    const start = new Date(Date.now() - DAYS * 86_400_000);
    const generated = performance.now();
    const stored = await generateMessages(knex, { devices: [device.id], messages: n, days: DAYS, start });
    const generateSeconds = round((performance.now() - generated) / 1000, 1);
    const [{ n: counted }] = await knex('device_message_counts').where({ device_id: device.id }).sum({ n: 'n' });

    api = o.databaseUrl ? await startApiProcess(o.databaseUrl, { asLaunched: true }) : null;
    const url = api?.url ?? bench.platform.apiUrl;
    const pid = api?.pid ?? process.pid;
    const rss = () => (api ? rssOf(pid) : process.memoryUsage().rss);
    const auth = { authorization: `Basic ${Buffer.from(`${bench.app.id}:${bench.app.secret}`).toString('base64')}` };
    const exportUrl = `${url}/api/v1/devices/${device.id}/messages/export?format=csv&until=${Date.now() + 86_400_000}`;

    // warm: a small export of the last hour, so that the code it runs is loaded and compiled before `before`
    await readAll(await fetch(`${exportUrl}&since=${Date.now() - 3_600_000}`, { headers: auth }));
    await settle(2_000);
    const before = rss() ?? 0;

    const head = performance.now();
    const total = Number((await fetch(exportUrl, { method: 'HEAD', headers: auth })).headers.get('x-total-count'));
    const headSeconds = round((performance.now() - head) / 1000, 2);

    const during = sampler(rss);
    const started = performance.now();
    const res = await fetch(exportUrl, { headers: auth });
    const headersSeconds = (performance.now() - started) / 1000;
    const body = await readAll(res);
    const seconds = (performance.now() - started) / 1000;
    const { peak } = during.stop();
    await settle(2_000);
    const after = rss() ?? 0;
    const rows = body.records - 1;
    return {
      scenario: 'export',
      database: bench.database,
      versions: await bench.versions(),
      apiProcess: api ? 'own process (serve --only api, launcher memory settings)' : 'the bench process (API, gateway, workers, PGlite)',
      messages: stored,
      deviceMessageCount: Number(counted),
      generateSeconds,
      headCountSeconds: headSeconds,
      headCount: total,
      csv: {
        status: res.status,
        rows,
        megabytes: round(body.bytes / MB, 1),
        firstByteSeconds: round(headersSeconds + body.firstChunkMs / 1000, 2),
        seconds: round(seconds, 1),
        rowsPerSecond: Math.round(rows / seconds),
        megabytesPerSecond: round(body.bytes / MB / seconds, 1),
      },
      rssMb: { before: round(before / MB), peak: round(peak / MB), after: round(after / MB), rise: round((peak - before) / MB) },
      rssRiseGoalMb: RSS_RISE_GOAL_MB,
      machine: machine(),
    };
  } finally {
    await api?.close();
    await bench.close();
  }
}

export const exportScenario = benchScenario({
  name: 'export',
  description: 'a CSV export of one device\'s --export-messages messages over HTTP: API RSS before/peak/after and time',
  run,
  problems: (r) => [
    ...(r.csv.status !== 200 ? [`export: answered ${r.csv.status}`] : []),
    ...(r.csv.rows !== r.messages ? [`export: ${r.messages} messages stored, ${r.csv.rows} rows exported`] : []),
    ...(r.deviceMessageCount !== r.messages ? [`export: ${r.messages} messages stored, device_message_counts says ${r.deviceMessageCount}`] : []),
    ...(r.headCount !== r.messages ? [`export: ${r.messages} messages stored, HEAD counted ${r.headCount}`] : []),
  ],
});
