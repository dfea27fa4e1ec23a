import { STATUS_CODES } from 'node:http';
import type { FastifyInstance } from 'fastify';
import type { Operation } from './operations.js';
import type { FuzzRequest } from './requests.js';
import type { World } from './world.js';
import { stringifyDeep } from './json.js';

/** A request slower than this is a hang: the API answers or refuses well within it, whatever the input. */
export const HANG_MS = 5000;

export interface Outcome { status: number; ms: number; body: string; problem: string | null; retryAfter?: string; contentType?: string }

const NO_SUCH_OBJECT = '00000000-0000-4000-8000-000000000000';

/** Replaces every `$ref:<kind>` string by the id of that object in `world`. */
export function resolve<T>(value: T, world: World): T {
  const one = (s: string) => (s.startsWith('$ref:') ? world.ids[s.slice(5)] ?? NO_SUCH_OBJECT : s);
  // Refs sit in the first levels of a request; deeper (hostile nesting) is left as generated.
  const walk = (v: unknown, depth: number): unknown => {
    if (typeof v === 'string') return one(v);
    if (depth > 40) return v;
    if (Array.isArray(v)) return v.map((c) => walk(c, depth + 1));
    if (typeof v === 'object' && v !== null) return Object.fromEntries(Object.entries(v).map(([k, c]) => [k, walk(c, depth + 1)]));
    return v;
  };
  return walk(value, 0) as T;
}

function authHeader(r: FuzzRequest, op: Operation, world: World): string | undefined {
  const admin = op.path.startsWith('/admin/');
  switch (r.auth) {
    case 'valid': return admin ? world.auth.admin : world.auth.app;
    case 'none': return undefined;
    case 'bad-basic': return `Basic ${Buffer.from(`${world.ids.application}:wrong`).toString('base64')}`;
    case 'bad-bearer': return 'Bearer not-a-token';
    case 'garbage': return 'Basic %%%\u00ff';
    case 'consumer': return world.auth.consumer;
    case 'stranger': return world.auth.stranger;
    case 'cross': return admin ? world.auth.app : world.auth.admin;
  }
}

/** Percent-encoding of the UTF-8 bytes (never throws: a lone surrogate goes as U+FFFD, as any client would send it). */
const pct = (s: string) => [...Buffer.from(s, 'utf8')]
  .map((b) => (/[A-Za-z0-9\-_.~]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, '0')}`)).join('');

export function urlOf(r: FuzzRequest, op: Operation): string {
  const path = op.path.replace(/\{([^}]+)\}/g, (_, name: string) => pct(r.path[name] ?? ''));
  const pairs = r.query.map(([k, v]) => `${pct(k)}=${pct(v)}`);
  if (r.rawQuery !== undefined) pairs.push(r.rawQuery);
  return pairs.length ? `${path}?${pairs.join('&')}` : path;
}

/** Sends `r` (its refs resolved against `world`) and judges the answer. */
export async function send(app: FastifyInstance, op: Operation, raw: FuzzRequest, world: World): Promise<Outcome> {
  const r = resolve(raw, world);
  const headers: Record<string, string> = {};
  const auth = authHeader(r, op, world);
  if (auth !== undefined) headers.authorization = auth;
  let payload: string | undefined;
  if (r.body && 'raw' in r.body) { payload = r.body.raw; headers['content-type'] = r.body.contentType; }
  else if (r.body) { payload = stringifyDeep(r.body.json); headers['content-type'] = r.body.contentType ?? 'application/json'; }
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const hang = new Promise<null>((ok) => { timer = setTimeout(() => ok(null), HANG_MS); });
  const res = await Promise.race([app.inject({ method: op.method as 'GET', url: urlOf(r, op), headers, payload }), hang])
    .finally(() => clearTimeout(timer));
  const ms = Math.round(performance.now() - started);
  if (!res) return { status: 0, ms, body: '', problem: `no answer within ${HANG_MS} ms` };
  const retryAfter = res.headers['retry-after'] === undefined ? undefined : String(res.headers['retry-after']);
  const contentType = String(res.headers['content-type'] ?? '');
  return { status: res.statusCode, ms, body: res.body, retryAfter, contentType, problem: judge(op, res.statusCode, contentType, res.body) };
}

/** Why the answer is wrong, or null: a 5xx, or a 4xx that is not the documented error body. */
export function judge(op: Operation, status: number, contentType: unknown, body: string): string | null {
  if (status >= 500) return `answered ${status}`;
  if (status < 400) return null;
  return errorBodyProblem(op, status, contentType, body);
}

/** Why `body` is not the documented error body for `status`, or null. */
export function errorBodyProblem(op: Operation, status: number, contentType: unknown, body: string): string | null {
  if (!String(contentType ?? '').startsWith('application/json')) return `${status} with content-type ${String(contentType)}`;
  let json: any;
  try { json = JSON.parse(body); } catch { return `${status} with a body that is not JSON`; }
  const required = op.errorSchema?.required ?? ['statusCode', 'error', 'message'];
  const missing = required.filter((k) => !(json && typeof json === 'object' && k in json));
  if (missing.length) return `${status} error body lacks ${missing.join(', ')}`;
  if (json.statusCode !== status) return `${status} error body says statusCode ${json.statusCode}`;
  if (json.error !== STATUS_CODES[status]) return `${status} error body says error ${JSON.stringify(json.error)}`;
  if (typeof json.message !== 'string' || !json.message) return `${status} error body without a message`;
  if (/\bat .*\.(ts|js):\d+/.test(body)) return `${status} error body with a stack trace`;
  return null;
}
