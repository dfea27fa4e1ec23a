import type { ServiceKind } from '../../lib/services.js';
import { ValidationError } from '../../lib/errors.js';
import { EPOCH, parseTimeParam } from '../../lib/time.js';
import type { StreamCursor } from '../../db/paging.js';
import type { LinkBuilder } from '../context.js';

export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 100;

export type Query = Record<string, string | undefined>;
type Extra = Record<string, string | number | undefined | null>;

function intParam(name: string, raw: string | undefined, def: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (raw === undefined || raw === '') return def;
  // Above 2^53 the number is no longer exact, and PostgreSQL's bigint OFFSET would overflow (a 500).
  if (!/^\d+$/.test(raw.trim()) || Number(raw) < min) throw new ValidationError(`${name} must be an integer ≥ ${min}, got "${raw}"`);
  if (Number(raw) > max) throw new ValidationError(`${name} must be at most ${max}, got "${raw}"`);
  return Number(raw);
}

/** `limit` default 20, maximum 100 — larger values are clamped, not refused (docs/reference/rest-api.md#pagination). */
export function parseLimit(raw: string | undefined): number {
  return Math.min(intParam('limit', raw, DEFAULT_LIMIT, 1, Infinity), MAX_LIMIT);
}

export function parseOffsetWindow(q: Query) {
  return { offset: intParam('offset', q.offset, 0, 0), limit: parseLimit(q.limit) };
}

export function offsetMeta(links: LinkBuilder, service: ServiceKind, path: string,
  p: { total: number; offset: number; limit: number }, extra: Extra = {}) {
  const at = (offset: number) => links.url(service, path, { ...extra, offset, limit: p.limit });
  const lastOffset = p.total > 0 ? Math.floor((p.total - 1) / p.limit) * p.limit : 0;
  const out: { first: string; last: string; next?: string; prev?: string } = { first: at(0), last: at(lastOffset) };
  if (p.offset + p.limit < p.total) out.next = at(p.offset + p.limit);
  if (p.offset > 0) out.prev = at(Math.max(0, p.offset - p.limit));
  return { pagination: { total: p.total, offset: p.offset, limit: p.limit, links: out } };
}

export interface StreamParams { since?: Date; until: Date; before?: string; limit: number }

/**
 * The `until` of a prior link whose page ended inside a millisecond: that millisecond in ISO 8601, its fraction
 * extended by the last record's id written as 39 decimal digits (the UUID's 128 bits). A date parser reads it as that
 * millisecond, so a client that re-validates a link's query as dates and refuses keys it does not know (the original
 * platform's SDK does both) follows it unchanged; the platform reads the id back and continues after that record.
 */
const CURSOR_UNTIL = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3})(\d{39})Z$/i;
const UUID_SPACE = 1n << 128n;

export function cursorUntil(cursor: StreamCursor): string | number {
  if (cursor.before === undefined) return cursor.until.getTime();
  const digits = BigInt(`0x${cursor.before.replace(/-/g, '')}`).toString().padStart(39, '0');
  return `${cursor.until.toISOString().slice(0, -1)}${digits}Z`;
}

/** `until` as a cursor (cursorUntil), or null when it is a plain date. */
function parseCursorUntil(raw: string | undefined): StreamCursor | null {
  const m = raw === undefined ? null : CURSOR_UNTIL.exec(String(raw).trim());
  if (!m) return null;
  const n = BigInt(m[2]);
  if (n >= UUID_SPACE) throw new ValidationError(`until "${String(raw).trim().slice(0, 60)}..." is not a cursor of a prior link`);
  const hex = n.toString(16).padStart(32, '0');
  const before = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  return { until: parseTimeParam('until', `${m[1]}Z`)!, before };
}

export function parseStreamWindow(q: Query, now = new Date()): StreamParams {
  const since = parseTimeParam('since', q.since);
  const cursor = parseCursorUntil(q.until);
  const until = cursor?.until ?? parseTimeParam('until', q.until) ?? now;
  // an inverted window is a client mistake, refused naming both bounds; since = until is a valid empty window
  // (since is exclusive, until inclusive), which a poller asking "anything since my last look?" produces
  if (since && since.getTime() > until.getTime()) {
    throw new ValidationError(`since (${since.toISOString()}) must not be after until (${until.toISOString()})`);
  }
  return { since, until, ...(cursor ? { before: cursor.before } : {}), limit: parseLimit(q.limit) };
}

/**
 * Where a list asked without `until` ends: after every stored stamp. "The time of the call" is read on the clock of
 * what is listed: a dummy's runs at a speed factor stamp ahead of the wall clock (docs/concepts/simulator.md (Time)), and
 * nothing is stamped after a device's latest stamp, so no upper bound is that bound without a query for it.
 * The answer's `until` is the time of the call, or the newest item's stamp when that is later.
 */
export const OPEN_UNTIL = new Date('9999-12-31T23:59:59.999Z');

/** parseStreamWindow for a list of a device's or vehicle's data: without `until`, OPEN_UNTIL. */
export function parseListWindow(q: Query): StreamParams {
  return parseStreamWindow(q, OPEN_UNTIL);
}

function reportedUntil(until: Date, newest: Date | null): Date {
  if (until !== OPEN_UNTIL) return until;
  const now = new Date();
  return newest && newest.getTime() > now.getTime() ? newest : now;
}

/**
 * Stream meta (docs/reference/rest-api.md#pagination): `prior` = same path and filters with the page's prior cursor:
 * `until` = last item − 1 ms (epoch milliseconds), or, when the page ended inside a millisecond, that millisecond
 * with the last item's id (cursorUntil); `links` is `{}` when nothing remains.
 */
export function streamMeta(links: LinkBuilder, service: ServiceKind, path: string, w: StreamParams,
  page: { remaining: number; prior: StreamCursor | null; newest?: Date | null }, extra: Extra = {}) {
  const out: { prior?: string } = {};
  if (page.prior) {
    out.prior = links.url(service, path, {
      ...extra, limit: w.limit, since: w.since?.getTime(), until: cursorUntil(page.prior),
    });
  }
  return {
    pagination: {
      remaining: page.remaining, limit: w.limit, until: reportedUntil(w.until, page.newest ?? null).toISOString(),
      since: (w.since ?? EPOCH).toISOString(), sortDir: 'desc' as const, links: out,
    },
  };
}

/** A page as the repositories return it: `remaining`, the prior cursor, and the items under the list's own name. */
export type ListPage<K extends string, T> = { remaining: number; prior: StreamCursor | null; newest?: Date | null } & { [P in K]: T[] };

/**
 * One stream-paginated list of a module: where it is, how its caller is checked, how it loads and shows its items.
 * `Q` is the route's query string as its schema types it.
 */
export interface StreamList<K extends string, T, R, C, Q extends Query> {
  service: ServiceKind;
  /** The name of the items, in the repository's page and in the answer. */
  key: K;
  /** The list's path; the `prior` link repeats it. */
  path: string;
  present: (item: T) => R;
  /**
   * Runs once the window is valid: the list's own query parameters, then the 404 when the caller cannot read
   * what the list belongs to. What it returns goes to `load`.
   */
  check?: (q: Q) => Promise<C>;
  load: (w: StreamParams, checked: C) => Promise<ListPage<K, T>>;
  /** Query parameters the `prior` link keeps besides the window. */
  keep?: (q: Q, checked: C) => Extra;
}

/** The answer of a stream-paginated list: its items under `key`, and `meta.pagination` (streamMeta). */
export type StreamListAnswer<K extends string, R> = { [P in K]: R[] } & { meta: ReturnType<typeof streamMeta> };

/** Answers a stream-paginated list (StreamList) for the query `q`. */
export async function streamList<K extends string, T, R, C = void, Q extends Query = Query>(
  links: LinkBuilder, q: Q, list: StreamList<K, T, R, C, Q>,
): Promise<StreamListAnswer<K, R>> {
  const w = parseListWindow(q);
  const checked = (await list.check?.(q)) as C;
  const page = await list.load(w, checked);
  const items: T[] = page[list.key];
  const meta = streamMeta(links, list.service, list.path, w, page, list.keep?.(q, checked));
  // A computed key is typed `{ [x: string]: R[] }`: the answer's type names `key` itself.
  return { [list.key]: items.map(list.present), meta } as StreamListAnswer<K, R>;
}
