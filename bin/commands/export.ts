import fs from 'node:fs';
import path from 'node:path';
import { Readable, Transform, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import cliProgress from 'cli-progress';
import type { Command } from 'commander';
import { CliError, createClient, output, type Client } from '../client.js';
import { withClientOptions } from './common.js';

/** What ends one exported row in each format, for the progress bar (a CSV's header row is one more). */
const ROW_ENDS: Record<string, string> = { csv: '\r\n', ndjson: '\n', gpx: '</trkpt>', geojson: '],[' };

/** Counts `marker` in the bytes passing through, across chunk boundaries too; `onCount` sees the running total. */
function countingStream(marker: string, onCount: (rows: number, bytes: number) => void): Transform {
  const needle = Buffer.from(marker);
  let carry: Buffer = Buffer.alloc(0);
  let rows = 0;
  let bytes = 0;
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      bytes += chunk.length;
      const text = carry.length ? Buffer.concat([carry, chunk]) : chunk;
      let at = text.indexOf(needle);
      let end = 0;
      while (at !== -1) { rows++; end = at + needle.length; at = text.indexOf(needle, end); }
      carry = text.subarray(Math.max(end, text.length - (needle.length - 1)));
      onCount(rows, bytes);
      done(null, chunk);
    },
  });
}

/** A bar of rows written out of `total` on a terminal's stderr; nothing elsewhere (stdout may be the export itself). */
function progressBar(total: number | null) {
  if (!process.stderr.isTTY) return { update: () => undefined, stop: () => undefined };
  const bar = new cliProgress.SingleBar({
    stream: process.stderr, hideCursor: true, barsize: 30,
    format: total === null ? '{bytes} MB written' : '[{bar}] {value}/{total} rows | {bytes} MB | {eta_formatted} left',
  }, cliProgress.Presets.shades_classic);
  bar.start(total ?? 0, 0, { bytes: '0.0' });
  return {
    update: (rows: number, bytes: number) => bar.update(total === null ? 0 : Math.min(rows, total), { bytes: (bytes / 1e6).toFixed(1) }),
    stop: () => bar.stop(),
  };
}

const query = (q: Record<string, string | undefined>) => {
  const s = new URLSearchParams(Object.entries(q).filter((e): e is [string, string] => e[1] !== undefined)).toString();
  return s ? `?${s}` : '';
};

/**
 * The HEAD answer of an export. A HEAD's refusal has no body to say why: a 4xx other than 404 is asked again as a
 * GET, whose error body names the field (the API refuses it before any export starts).
 */
async function headOf(client: Client, url: string): Promise<Response> {
  try {
    return await client.fetch('HEAD', url);
  } catch (err) {
    if (!(err instanceof CliError) || err.status === undefined || err.status === 404 || err.status >= 500) throw err;
    const res = await client.fetch('GET', url);
    await res.body?.cancel();
    throw err;
  }
}

/** The export path of `id`: the device's if the application reads such a device, else the vehicle's; its HEAD answer. */
async function messagesExport(client: Client, id: string, q: string): Promise<{ url: string; head: Response }> {
  const device = `/api/v1/devices/${encodeURIComponent(id)}/messages/export${q}`;
  try {
    return { url: device, head: await headOf(client, device) };
  } catch (err) {
    if (!(err instanceof CliError) || err.status !== 404) throw err;
  }
  const vehicle = `/api/v1/vehicles/${encodeURIComponent(id)}/messages/export${q}`;
  try {
    return { url: vehicle, head: await headOf(client, vehicle) };
  } catch (err) {
    if (err instanceof CliError && err.status === 404) throw new CliError(`No device or vehicle ${id} that this application can read`);
    throw err;
  }
}

/**
 * Streams the export at `url` to `out` (stdout without one) with a progress bar, and says what it wrote. A file is
 * written beside its name and renamed once complete, so an interrupted export never looks like a whole one.
 */
async function download(client: Client, url: string, head: Response, format: string, out: string | undefined, json: boolean) {
  const header = head.headers.get('x-total-count');
  const total = header === null ? null : Number(header);
  const res = await client.fetch('GET', url);
  if (!res.body) throw new CliError(`The API answered ${url} without a body`);
  const bar = progressBar(total);
  let bytes = 0;
  const counter = countingStream(ROW_ENDS[format] ?? '\n', (rows, seen) => {
    bytes = seen;
    bar.update(format === 'csv' ? rows - 1 : rows, seen);
  });
  const part = out ? path.join(path.dirname(out), `.${path.basename(out)}.part`) : null;
  const sink: Writable = part ? fs.createWriteStream(part) : process.stdout;
  try {
    await pipeline(Readable.fromWeb(res.body as WebReadableStream<Uint8Array>), counter, sink, { end: part !== null });
    if (part) fs.renameSync(part, out!);
  } catch (err) {
    if (part) fs.rmSync(part, { force: true });
    throw new CliError(`The export stopped: ${(err as Error).message}`);
  } finally {
    bar.stop();
  }
  const summary = { file: out ?? null, format, rows: total, bytes };
  const line = `Wrote ${total ?? '?'} ${format === 'gpx' || format === 'geojson' ? 'points' : 'messages'} (${bytes} bytes) to ${out ?? 'stdout'}`;
  if (out) output(json, summary, () => line);
  else process.stderr.write(`${line}\n`);
}

/** `drivewire export messages|trip`: a device's or vehicle's messages, or a trip's track, to a file. */
export function registerExportCommands(program: Command): void {
  const exp = program.command('export').description("export a device's or vehicle's messages, or a trip's track, to a file");
  withClientOptions(exp.command('messages <id>')
    .description("a device's or a vehicle's messages (the id says which), oldest first, as CSV, NDJSON or GPX"))
    .option('--since <time>', 'exclusive lower bound: ISO 8601, YYYY-MM-DD or epoch ms (default: none)')
    .option('--until <time>', 'inclusive upper bound: ISO 8601, YYYY-MM-DD or epoch ms (default: now)')
    .option('--format <format>', 'csv, ndjson or gpx', 'csv')
    .option('--out <file>', 'file to write (default: stdout)')
    .action(async (id: string, o) => {
      const client = createClient(o);
      const { url, head } = await messagesExport(client, id, query({ since: o.since, until: o.until, format: o.format }));
      await download(client, url, head, o.format, o.out, o.json === true);
    });
  withClientOptions(exp.command('trip <id>').description("a trip's track as GPX or GeoJSON (a Feature with the trip's statistics)"))
    .option('--format <format>', 'gpx or geojson', 'gpx')
    .option('--out <file>', 'file to write (default: stdout)')
    .action(async (id: string, o) => {
      const client = createClient(o);
      const url = `/api/v1/trips/${encodeURIComponent(id)}/export${query({ format: o.format })}`;
      await download(client, url, await headOf(client, url), o.format, o.out, o.json === true);
    });
}
