// Shared by the hostile API tests (test/hostile/api-*.test.ts): a real API listening on a port, an
// HTTP client that records every 5xx it sees (a test that got one fails in afterEach), and small
// builders of hostile input.
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import type { LiveHooks } from '../../api/context.js';

export interface Call { auth?: string; body?: unknown; raw?: string; headers?: Record<string, string> }
export interface Answer { status: number; json: any; headers: Headers }

/** Starts the API for the calling test file (with `live`, its live stream); `t()` and `http` are usable inside its tests. */
export function liveApi(overrides: Record<string, unknown> = {}, live?: LiveHooks) {
  let t: TestApp | undefined;
  let base = '';
  let serverErrors: string[] = [];
  beforeAll(async () => {
    t = await buildTestApp(overrides, live);
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  });
  afterEach(() => { const seen = serverErrors; serverErrors = []; expect(seen).toEqual([]); });
  afterAll(async () => { await t?.close(); });

  async function http(method: string, path: string, o: Call = {}): Promise<Answer> {
    const raw = o.raw ?? (o.body === undefined ? undefined : JSON.stringify(o.body));
    const res = await fetch(`${base}${path}`, {
      method, body: raw, signal: AbortSignal.timeout(5_000),
      headers: { ...(o.auth ? { authorization: o.auth } : {}), ...(raw !== undefined ? { 'content-type': 'application/json' } : {}), ...o.headers },
    });
    const text = await res.text();
    let json: any = null;
    try { json = JSON.parse(text); } catch { /* not JSON */ }
    if (res.status >= 500) serverErrors.push(`${method} ${path.slice(0, 120)} → ${res.status} ${text.slice(0, 200)}`);
    return { status: res.status, json, headers: res.headers };
  }

  /** An application with one registered device. */
  async function setup() {
    const app = await t!.make.application();
    const device = await t!.make.device(app.principal);
    return { app, device };
  }
  return { t: () => t!, base: () => base, http, setup };
}

/** A 4xx (400 unless told) with the error body whose message names `field`. */
export function refused(res: Answer, field: string, status = 400) {
  expect(res.status).toBe(status);
  expect(res.json).toMatchObject({ statusCode: status, error: expect.any(String) });
  expect(res.json.message).toContain(field);
}

export const LINE = { type: 'LineString', coordinates: [[-96.8, 32.78], [-96.8, 32.782], [-96.798, 32.782]] };
export const BOUNDARY = { type: 'parametric', parameter: 'vehicleSpeed', min: 35, max: null };
/** `levels` nested arrays as JSON text (JSON.stringify itself overflows on such values). */
export const nested = (levels: number) => `${'['.repeat(levels)}1${']'.repeat(levels)}`;
