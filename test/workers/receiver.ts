import http, { type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { NOTIFICATION_ID_HEADER, SIGNATURE_HEADER, verifyWebhook } from '../../lib/webhook-signature.js';

export interface Received { path: string; headers: IncomingHttpHeaders; body: string }

/**
 * A real webhook receiver on 127.0.0.1 (port 0). Paths decide the answer:
 * `/ok/…` 201 with a JSON body, `/fail/…` 500, `/flaky/…` 500 on the first call then 200,
 * `/hang/…` never answers, `/trickle/…` sends its status and a first chunk but never ends the body,
 * `/hold/…` answers 200 once `release(path)` is called, `/until/…` 503 until `heal(path)` is called and 200 after,
 * `/nul/…` 200 with a body holding a NUL byte (`ok\u0000nul`).
 * `/signed/…` is what a careful integrator runs (docs/concepts/rules-events-webhooks.md): 401 unless the
 * signature verifies against `opts.secret` within the tolerance, 200 `duplicate` for a notification
 * id already accepted (kept in `accepted` once), else 200 `accepted`.
 */
export async function startReceiver(opts: { secret?: string; toleranceS?: number } = {}) {
  const received: Received[] = [];
  const accepted = new Map<string, Received>();
  const signed = (r: Received, res: ServerResponse) => {
    const check = verifyWebhook(r.body, r.headers[SIGNATURE_HEADER] as string, opts.secret ?? '', { toleranceS: opts.toleranceS });
    if (!check.ok) return res.writeHead(401).end(check.reason);
    const id = r.headers[NOTIFICATION_ID_HEADER] as string;
    if (accepted.has(id)) return res.writeHead(200).end('duplicate');
    accepted.set(id, r);
    res.writeHead(200).end('accepted');
  };
  const held = new Map<string, ServerResponse[]>();
  const seen = new Map<string, number>();
  const healed = new Set<string>();
  /** `/slowok/…` answers 201 after 200 ms: how many of its calls are open now, and at most. */
  const slow = { open: 0, most: 0 };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '/';
      const r = { path, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      received.push(r);
      const calls = (seen.get(path) ?? 0) + 1;
      seen.set(path, calls);
      if (path.startsWith('/ok/')) res.writeHead(201, { 'content-type': 'application/json' }).end('{"status":"success"}');
      else if (path.startsWith('/slowok/')) {
        slow.open++;
        slow.most = Math.max(slow.most, slow.open);
        setTimeout(() => { slow.open--; res.writeHead(201).end('ok'); }, 200);
      }
      else if (path.startsWith('/fail/')) res.writeHead(500).end('receiver failed');
      else if (path.startsWith('/flaky/')) res.writeHead(calls === 1 ? 500 : 200).end(calls === 1 ? 'not yet' : 'ok now');
      else if (path.startsWith('/signed/')) signed(r, res);
      else if (path.startsWith('/trickle/')) { res.writeHead(200, { 'content-type': 'text/plain' }); res.write('partial'); }
      else if (path.startsWith('/hold/')) held.set(path, [...(held.get(path) ?? []), res]);
      else if (path.startsWith('/until/')) res.writeHead(healed.has(path) ? 200 : 503).end(healed.has(path) ? 'healed' : 'down');
      else if (path.startsWith('/nul/')) res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\u0000nul');
      else if (!path.startsWith('/hang/')) res.writeHead(404).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    base,
    received,
    /** `/signed/…` deliveries that verified, by notification id (duplicates dropped). */
    accepted,
    /** The most `/slowok/…` calls that were open at once. */
    mostOpenSlowOk: () => slow.most,
    /** Requests received on a path. */
    on: (path: string) => received.filter((r) => r.path === path),
    release(path: string) {
      for (const res of held.get(path) ?? []) res.writeHead(200).end('released');
      held.delete(path);
    },
    heal(path: string) { healed.add(path); },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
export type Receiver = Awaited<ReturnType<typeof startReceiver>>;

/** Waits until `check` returns a truthy value (polling), or fails after `ms`. */
export async function waitFor<T>(check: () => Promise<T> | T, what: string, ms = 15_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
