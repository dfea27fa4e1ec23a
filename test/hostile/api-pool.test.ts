import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { holdConnections } from '../fuzz/saturation.js';
import { boundedWorkInFlight } from '../../db/acquire-limit.js';

/**
 * Over real HTTP on PGlite (one connection) and PostgreSQL (a pool of ten): with
 * every pooled connection taken, /health answers 503 within a second naming the database as slow,
 * and an API call is answered 503 with Retry-After once it has waited `dbAcquireTimeoutMs`, instead
 * of hanging 60 s into a 500. A connection that comes free in time serves the waiting request.
 */
const WAIT_MS = 1000;
let t: TestApp;
let base: string;
let held: Awaited<ReturnType<typeof holdConnections>> | null = null;
beforeAll(async () => {
  t = await buildTestApp({ dbAcquireTimeoutMs: WAIT_MS });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
});
afterEach(async () => { await release(); });
afterAll(async () => { await t?.close(); });

/** Takes every connection of the pool, as long-running work would; `release` gives them back (twice is harmless). */
async function saturate() { held = await holdConnections(t.db.knex); }
async function release() { await held?.release(); }

async function timed(path: string, auth?: string) {
  const started = Date.now();
  const res = await fetch(`${base}${path}`, { headers: auth ? { authorization: auth } : {}, signal: AbortSignal.timeout(10_000) });
  return { status: res.status, headers: res.headers, json: await res.json(), ms: Date.now() - started };
}

describe('a saturated connection pool', () => {
  it('/health answers 503 within a second, naming the database as slow, and 200 again once connections are free', async () => {
    expect((await timed('/health')).status).toBe(200);
    await saturate();
    const res = await timed('/health');
    expect(res.ms).toBeLessThan(1000);
    expect(res.status).toBe(503);
    expect(res.json).toMatchObject({ status: 'degraded', checks: { database: false }, slow: ['database'], message: expect.stringContaining('database') });
    const burst = await Promise.all(Array.from({ length: 10 }, () => timed('/health')));
    expect(burst.map((r) => r.status)).toEqual(Array(10).fill(503));
    expect(Math.max(...burst.map((r) => r.ms))).toBeLessThan(1000);
    await release();
    const again = await timed('/health');
    expect(again).toMatchObject({ status: 200, json: { status: 'ok', checks: { database: true } } });
  });

  it('answers an API call 503 with Retry-After and the error body after the configured wait, not a 60 s 500', async () => {
    const app = await t.make.application();
    await saturate();
    const res = await timed('/api/v1/devices', app.auth);
    expect(res.status).toBe(503);
    expect(res.ms).toBeGreaterThanOrEqual(WAIT_MS - 50);
    expect(res.ms).toBeLessThan(WAIT_MS + 2000);
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(res.json).toEqual({ statusCode: 503, error: 'Service Unavailable', message: expect.stringContaining('retry') });
    // Several at once: each is answered, none waits for the others' turn.
    const many = await Promise.all(Array.from({ length: 20 }, () => timed('/api/v1/devices', app.auth)));
    expect(many.map((r) => r.status)).toEqual(Array(20).fill(503));
    expect(Math.max(...many.map((r) => r.ms))).toBeLessThan(WAIT_MS + 2000);
    await release();
    expect((await timed('/api/v1/devices', app.auth)).status).toBe(200);
  });

  it('counts a request as bounded work until its answer, then none, so the async context is off between requests', async () => {
    const app = await t.make.application();
    await saturate();
    const pending = timed('/api/v1/devices', app.auth);
    for (let i = 0; i < 100 && boundedWorkInFlight() === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(boundedWorkInFlight()).toBe(1);
    await release();
    expect((await pending).status).toBe(200);
    expect(boundedWorkInFlight()).toBe(0);
    // switched on again by the next request, whose bound holds
    await saturate();
    expect((await timed('/api/v1/devices', app.auth)).status).toBe(503);
    expect(boundedWorkInFlight()).toBe(0);
  });

  it('serves a waiting request when a connection comes free within the wait', async () => {
    const app = await t.make.application();
    await saturate();
    setTimeout(() => void release(), WAIT_MS / 3);
    const res = await timed('/api/v1/devices', app.auth);
    expect(res.status).toBe(200);
  });

  it('leaves work outside any request (the gateway, the workers) waiting past the bound rather than failing it', async () => {
    await saturate();
    const started = Date.now();
    const query = t.db.knex.raw('select 1 as one');
    setTimeout(() => void release(), WAIT_MS * 2);
    const result = await query;
    expect(Date.now() - started).toBeGreaterThanOrEqual(WAIT_MS * 2 - 50);
    expect(JSON.stringify(result)).toContain('"one":1');
  });
});
