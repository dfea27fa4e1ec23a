import { Readable } from 'node:stream';
import { ValidationError } from '../../../lib/errors.js';
import { parseTimeParam } from '../../../lib/time.js';
import type { ExportCursor, ExportRow } from '../../../db/repositories/exports.repository.js';
import { EXPORT_PAGE_ROWS } from '../../../db/repositories/exports.repository.js';
import type { ExportWriter } from './exports.formats.js';

export const MESSAGE_FORMATS = ['csv', 'ndjson', 'gpx'] as const;
export const TRIP_FORMATS = ['gpx', 'geojson'] as const;

/** `format`: absent or empty is the first of `allowed`; anything else outside it is a 400 naming the field. */
export function parseFormat<F extends string>(raw: string | undefined, allowed: readonly F[]): F {
  const v = raw?.trim();
  if (!v) return allowed[0];
  if (!allowed.includes(v as F)) throw new ValidationError(`format must be one of ${allowed.join(', ')}; got "${v.slice(0, 40)}"`);
  return v as F;
}

/**
 * The export's window: `since` exclusive, `until` inclusive (default: the time of the call, so that the export is a
 * fixed range however long it takes to read), as every list takes them; since after until is a 400.
 */
export function parseRange(q: { since?: string; until?: string }, now = new Date()): { since?: Date; until: Date; untilGiven: boolean } {
  const since = parseTimeParam('since', q.since);
  const given = parseTimeParam('until', q.until);
  const until = given ?? now;
  if (since && since.getTime() > until.getTime()) {
    throw new ValidationError(`since (${since.toISOString()}) must not be after until (${until.toISOString()})`);
  }
  return { since, until, untilGiven: given !== undefined };
}

/** 2024-05-01T10:00:00.000Z → 20240501T100000Z: a timestamp as it can stand in a file name. */
const stamp = (d: Date) => d.toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '');

/** `attachment; filename="device-<id>-from-<since>-to-<until>.csv"`: what the file holds, by its name. */
export function attachment(kind: string, id: string, extension: string, r: { since?: Date; until?: Date } = {}): string {
  const parts = [kind, id, ...(r.since ? ['from', stamp(r.since)] : []), ...(r.until ? ['to', stamp(r.until)] : [])];
  return `attachment; filename="${parts.join('-')}.${extension}"`;
}

/**
 * Rows written as one chunk of the reply (a CSV's joined so by PostgreSQL): a chunk of a few tens of KB. V8 allocates
 * a string or buffer of more than 128 KB outside the young generation, where only a full collection frees it: a whole
 * page as one chunk (about 600 KB of CSV) made the API's memory grow by every page until one ran
 * (docs/development/performance.md, export).
 */
export const ROWS_PER_CHUNK = 250;

/**
 * An export's pages: the first (read before the answer starts), the one after a cursor; `last`: the cursor after a
 * page, null when it was the last one; `perChunk`: a page's items written as one chunk of the reply.
 */
export interface ExportPages<R> {
  /** Emptied once written, so that the stream does not hold it while later pages are read. */
  first: R[];
  next(after: ExportCursor): Promise<R[]>;
  last(page: R[]): ExportCursor | null;
  perChunk: number;
}

/** Pages of messages: ROWS_PER_CHUNK rows a chunk; a full page may have a next one, after its last message. */
export function messagePages(first: ExportRow[], next: (after: ExportCursor) => Promise<ExportRow[]>, limit = EXPORT_PAGE_ROWS):
  ExportPages<ExportRow> {
  const last = (page: ExportRow[]) => {
    const row = page[page.length - 1];
    return page.length >= limit ? { ts: row.timestamp, id: row.id } : null;
  };
  return { first, next, last, perChunk: ROWS_PER_CHUNK };
}

/**
 * The reply's body: the writer's head, each page's text (in chunks of `perChunk` items), its tail. Pages are read
 * one after the other by keyset, the next one once the current one is written: a Readable pulls the next chunk only
 * when the socket has taken the previous ones (backpressure), so one page is held at a time however large the
 * export, and none is read ahead of a slow client. `pages.first` is read before the answer starts, so that a failing
 * database is still an error answer.
 */
export function exportStream<R>(writer: ExportWriter<R>, pages: ExportPages<R>): Readable {
  // a page's text, then the cursor after it: the page is no longer held once written, while the next one is read
  function* write(page: R[]): Generator<string, ExportCursor | null> {
    for (let i = 0; i < page.length; i += pages.perChunk) {
      const text = writer.rows(page.slice(i, i + pages.perChunk));
      if (text) yield text;
    }
    return page.length ? pages.last(page) : null;
  }
  async function* chunks() {
    yield writer.head();
    const first = pages.first;
    pages.first = [];
    let after = yield* write(first);
    while (after) after = yield* write(await pages.next(after));
    const tail = writer.tail();
    if (tail) yield tail;
  }
  return Readable.from(chunks(), { objectMode: false });
}
