import net from 'node:net';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { createBus } from '../../lib/bus.js';
import { liveApi } from './api-helpers.js';

/**
 * Slow clients against the real server over TCP: a body or headers that dribble in are answered 408 and
 * their socket closed within the configured time, while other requests are served meanwhile; the live
 * stream, whose request is complete once upgraded, is never cut by these timeouts.
 */
const SETTINGS = {
  httpRequestTimeoutMs: 2_000, httpHeadersTimeoutMs: 1_000, httpBodyMinBytesPerSec: 240, httpBodyGraceMs: 500, httpMaxConnectionsPerIp: 6,
};
const bus = createBus();
const { t, base, http, setup } = liveApi(SETTINGS, { onMessage: bus.onMessage });

interface Slow { text: () => string; closedAfterMs: Promise<number>; stop: () => void }

/** A raw TCP client: sends `head` at once, then `chunk` every `everyMs` until the server closes the socket. */
function dribble(head: string, chunk: string, everyMs: number): Slow {
  const url = new URL(base());
  const socket = net.connect(Number(url.port), url.hostname);
  const started = Date.now();
  let text = '';
  socket.setEncoding('utf8');
  socket.on('data', (d: string) => { text += d; });
  socket.on('error', () => {});
  socket.write(head);
  const timer = setInterval(() => { if (socket.writable) socket.write(chunk); }, everyMs);
  const closedAfterMs = new Promise<number>((resolve) => socket.on('close', () => { clearInterval(timer); resolve(Date.now() - started); }));
  return { text: () => text, closedAfterMs, stop: () => { clearInterval(timer); socket.destroy(); } };
}

const post = (path: string, length: number, auth?: string) => [
  `POST ${path} HTTP/1.1`, 'Host: 127.0.0.1', 'Content-Type: application/json', `Content-Length: ${length}`,
  ...(auth ? [`Authorization: ${auth}`] : []), '', '{',
].join('\r\n');

/** The JSON body of a raw HTTP/1.1 answer. */
const bodyOf = (raw: string) => JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4));

async function closedWithin(s: Slow, ms: number): Promise<number> {
  const after = await Promise.race([s.closedAfterMs, new Promise<number>((r) => setTimeout(() => r(Infinity), ms))]);
  s.stop();
  return after;
}

describe('slow request bodies and headers', () => {
  it('answers a body arriving below the minimum rate with 408 and the error body and closes its socket; other requests are served meanwhile', async () => {
    const { app } = await setup();
    // Content-Length 100000, one byte every 100 ms: 10 bytes/s, under 240 bytes/s once the grace is over.
    const slow = dribble(post('/api/v1/routes', 100_000, app.auth), ' ', 100);
    const served = await http('GET', '/api/v1/devices', { auth: app.auth });
    expect(served.status).toBe(200);
    // the minimum rate's answer (its message), not the total timeout's (2 s), and long before the body could end
    expect(await closedWithin(slow, 10_000)).toBeLessThan(10_000);
    expect(slow.text()).toMatch(/^HTTP\/1\.1 408 /);
    expect(bodyOf(slow.text())).toEqual({ statusCode: 408, error: 'Request Timeout', message: expect.stringContaining('240 bytes/s') });
    expect((await http('GET', '/api/v1/devices', { auth: app.auth })).status).toBe(200);
  });

  it('closes the socket of an unauthenticated request at once once answered, whatever body it still declares', async () => {
    const slow = dribble(post('/api/v1/routes', 100_000), ' ', 100);
    // the body would take 10,000 s at this pace: closed when answered, not read to its end
    expect(await closedWithin(slow, 10_000)).toBeLessThan(10_000);
    expect(slow.text()).toMatch(/^HTTP\/1\.1 401 /);
    expect(bodyOf(slow.text())).toMatchObject({ statusCode: 401, error: 'Unauthorized' });
  });

  it('answers a body that keeps the minimum rate but outlasts the request timeout with 408 and closes its socket', async () => {
    const { app } = await setup();
    // 100 bytes every 100 ms (1,000 bytes/s, over the minimum rate) of a 1,000,000-byte body: ~1,000 s to finish.
    const slow = dribble(post('/api/v1/routes', 1_000_000, app.auth), ' '.repeat(100), 100);
    const after = await closedWithin(slow, 15_000);
    expect(after).toBeGreaterThanOrEqual(1_900); // not before the request timeout (2 s)
    expect(after).toBeLessThan(15_000);
    expect(slow.text()).toMatch(/^HTTP\/1\.1 408 /);
    expect(bodyOf(slow.text())).toEqual({ statusCode: 408, error: 'Request Timeout', message: expect.stringContaining('2000 ms') });
  });

  it('answers headers that dribble in with 408 and closes the socket after the headers timeout', async () => {
    const slow = dribble('GET /api/v1/devices HTTP/1.1\r\nHost: 127.0.0.1\r\n', 'X', 100);
    expect(await closedWithin(slow, 10_000)).toBeLessThan(10_000);
    expect(slow.text()).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('holds at most httpMaxConnectionsPerIp connections from one address: one more is answered 503 and closed, and idle ones time out', async () => {
    const { app } = await setup();
    // Slowloris: connections that send part of their headers, then nothing.
    const idle = Array.from({ length: 6 }, () => dribble('GET /api/v1/devices HTTP/1.1\r\n', '', 60_000));
    await new Promise((r) => setTimeout(r, 100));
    const over = dribble('GET /api/v1/devices HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n', '', 60_000);
    expect(await closedWithin(over, 10_000)).toBeLessThan(10_000);
    expect(over.text()).toMatch(/^HTTP\/1\.1 503 /);
    expect(bodyOf(over.text())).toEqual({ statusCode: 503, error: 'Service Unavailable', message: 'Too many connections from this address: at most 6 at once' });
    // The headers timeout (1 s) frees them; then the address is served again.
    for (const s of idle) expect(await closedWithin(s, 10_000)).toBeLessThan(10_000); // not the 60 s they would wait
    expect((await http('GET', '/api/v1/devices', { auth: app.auth })).status).toBe(200);
  });

  it('keeps a live stream open well past the request and headers timeouts', async () => {
    const { app, device } = await setup();
    const ws = new WebSocket(`${base().replace('http', 'ws')}/api/v1/messages`, { headers: { authorization: app.auth } });
    const frames: any[] = [];
    let closed: number | null = null;
    ws.on('message', (raw) => frames.push(JSON.parse(String(raw))));
    ws.on('close', (code) => { closed = code; });
    await new Promise((resolve, reject) => { ws.once('open', resolve); ws.once('error', reject); });
    await new Promise((r) => setTimeout(r, 4_500));
    expect(closed).toBeNull();
    ws.send(JSON.stringify({ type: 'sub', subject: { type: 'device', id: device.id } }));
    await expect.poll(() => frames.find((f) => f.type === 'sub')?.payload, { timeout: 2_000 }).toEqual({ ack: true });
    bus.publishMessages([{ id: '00000000-0000-4000-8000-000000000001', deviceId: device.id, timestamp: new Date(), data: { vehicleSpeed: 42 } }]);
    await expect.poll(() => frames.find((f) => f.type === 'pub')?.payload?.data, { timeout: 2_000 }).toEqual({ vehicleSpeed: 42 });
    ws.close();
    expect(t().config.httpRequestTimeoutMs).toBe(2_000);
  }, 10_000);
});
