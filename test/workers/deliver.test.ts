import http from 'node:http';
import net from 'node:net';
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deliver, RESPONSE_LIMIT, webhookClient, type DeliveryOptions } from '../../workers/notifications/deliver.js';
import { verifyWebhook } from '../../lib/webhook-signature.js';

/** A real receiver whose answer each test chooses by path; it records what reached it and how many connections it took. */
interface Seen { path: string; headers: http.IncomingHttpHeaders; body: Buffer }
const seen: Seen[] = [];
let connections = 0;
const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    seen.push({ path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks) });
    const path = (req.url ?? '').split('?')[0];
    if (path === '/ok') { res.writeHead(201, { 'content-type': 'application/json' }); res.end('{"status":"success"}'); }
    else if (path === '/big') { res.writeHead(200); res.end('x'.repeat(RESPONSE_LIMIT * 3)); }
    else if (path === '/redirect') { res.writeHead(302, { location: '/ok' }); res.end(); }
    else if (path === '/stall') { res.writeHead(200, { 'content-length': '100' }); res.write('part'); }
    else if (path === '/cut') { res.writeHead(200, { 'content-length': '100' }); res.write('part', () => res.socket?.destroy()); }
    else if (path === '/hints') { res.writeEarlyHints({ link: '</style.css>; rel=preload' }); res.writeHead(204); res.end(); }
    else { res.writeHead(500); res.end('no such path'); }
  });
});
server.on('connection', () => { connections++; });
let base = '';
const client = webhookClient({ timeoutMs: 300, allowPrivate: true });
const stopping = new AbortController();
const opts = (over: Partial<DeliveryOptions> = {}): DeliveryOptions => ({ client, signal: stopping.signal, ...over });
const body = Buffer.from(JSON.stringify({ notification: { tag: 'ü 🚗' } }), 'utf8');
const post = (path: string, over: Partial<DeliveryOptions> = {}, url = `${base}${path}`) =>
  deliver({ id: 'n-1', url, body, webhookSecret: 'whsec_test' }, opts(over));

beforeAll(async () => {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  base = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
});
afterAll(async () => {
  await client.close();
  server.closeAllConnections();
  server.close();
});

describe('webhook delivery client', () => {
  it('POSTs the body byte for byte with its signature and headers, and returns the answer', async () => {
    const r = await post('/ok?via=test');
    expect(r).toMatchObject({ responseCode: 201, response: '{"status":"success"}' });
    expect(r.respondedAt!.getTime()).toBeGreaterThanOrEqual(r.notifiedAt.getTime());
    const s = seen.find((x) => x.path === '/ok?via=test')!;
    expect(s.body.equals(body)).toBe(true);
    expect(s.headers).toMatchObject({
      'content-type': 'application/json', 'user-agent': 'drivewire-webhooks/1', 'x-drivewire-notification-id': 'n-1',
      'content-length': String(body.length),
    });
    expect(s.headers.authorization).toBeUndefined();
    expect(verifyWebhook(s.body.toString('utf8'), s.headers['x-drivewire-signature'] as string, 'whsec_test')).toMatchObject({ ok: true });
  });

  it('keeps connections to a receiver open between calls', async () => {
    const before = connections;
    for (let i = 0; i < 20; i++) expect(await post('/ok')).toMatchObject({ responseCode: 201 });
    expect(connections - before).toBeLessThanOrEqual(2); // undici may open a second one while the first is finishing
  });

  it('sends the credentials of the URL as Basic authorization', async () => {
    const url = base.replace('http://', 'http://hook%20user:p%40ss@') + '/ok?auth';
    expect(await post('', {}, url)).toMatchObject({ responseCode: 201 });
    const s = seen.find((x) => x.path === '/ok?auth')!;
    expect(s.headers.authorization).toBe(`Basic ${Buffer.from('hook user:p@ss').toString('base64')}`);
  });

  it('keeps the first RESPONSE_LIMIT bytes of a longer answer', async () => {
    const r = await post('/big');
    expect(r.responseCode).toBe(200);
    expect(r.response).toBe('x'.repeat(RESPONSE_LIMIT));
    expect(await post('/ok')).toMatchObject({ responseCode: 201 }); // the client carries on
  });

  it('does not follow a redirect: the 302 is the answer', async () => {
    const n = seen.length;
    expect(await post('/redirect')).toMatchObject({ responseCode: 302, response: '' });
    expect(seen.slice(n).map((s) => s.path)).toEqual(['/redirect']);
  });

  it('takes the final status after an informational one', async () => {
    expect(await post('/hints')).toMatchObject({ responseCode: 204, response: '' });
  });

  it('bounds the whole call: an answer that stalls mid-body is cut at the timeout', async () => {
    const started = Date.now();
    expect(await post('/stall')).toMatchObject({ responseCode: null, response: 'no answer within 300 ms', respondedAt: null });
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('says why a connection was refused', async () => {
    const closed = net.createServer();
    closed.listen(0, '127.0.0.1');
    await once(closed, 'listening');
    const { port } = closed.address() as net.AddressInfo;
    closed.close();
    await once(closed, 'close');
    expect(await post('', {}, `http://127.0.0.1:${port}/`)).toMatchObject({
      responseCode: null, response: `connect ECONNREFUSED 127.0.0.1:${port}`, respondedAt: null,
    });
  });

  it('says when the receiver closes the connection before the answer is complete', async () => {
    expect(await post('/cut')).toMatchObject({ responseCode: null, response: 'the connection closed before the answer was complete' });
  });

  it('refuses a private receiver without connecting, by address or by the name it resolves to', async () => {
    const strict = webhookClient({ timeoutMs: 300, allowPrivate: false });
    try {
      const n = seen.length;
      expect(await post('/ok', { client: strict })).toMatchObject({
        responseCode: null, response: 'refused: 127.0.0.1 is a loopback, private, link-local or otherwise non-public address',
      });
      // the URL is read once: the second call is refused from what the first found
      expect(strict.target(`${base}/ok`)).toBe(strict.target(`${base}/ok`));
      expect(await post('/ok', { client: strict })).toMatchObject({ responseCode: null, response: expect.stringMatching(/^refused: 127\.0\.0\.1 is/) });
      const port = (server.address() as net.AddressInfo).port;
      const r = await post('', { client: strict }, `http://localhost:${port}/ok`);
      expect(r.response).toMatch(/^refused: localhost resolves to (127\.0\.0\.1|::1), a loopback, private/);
      expect(seen.length).toBe(n);
    } finally {
      await strict.close();
    }
  });

  it('interrupts the calls in flight when the worker stops, and refuses new ones', async () => {
    const own = new AbortController();
    const patient = webhookClient({ timeoutMs: 10_000, allowPrivate: true });
    const calls = [post('/stall', { signal: own.signal, client: patient }), post('/stall', { signal: own.signal, client: patient })];
    await new Promise((r) => setTimeout(r, 50));
    own.abort();
    for (const r of await Promise.all(calls)) expect(r).toMatchObject({ responseCode: null, response: 'delivery interrupted: the worker stopped' });
    expect(await post('/ok', { signal: own.signal })).toMatchObject({ responseCode: null, response: 'delivery interrupted: the worker stopped' });
    await patient.close();
  });
});
