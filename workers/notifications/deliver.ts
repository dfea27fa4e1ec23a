import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { NOTIFICATION_ID_HEADER, SIGNATURE_HEADER, signWebhook } from '../../lib/webhook-signature.js';
import { bareHost, guardedLookup, isPublicAddress, PrivateAddressError, UNRESOLVED } from '../../lib/net-guard.js';

/** Bytes of a receiver's answer kept in `response`. */
export const RESPONSE_LIMIT = 64 * 1024;
export const USER_AGENT = 'drivewire-webhooks/1';

export interface Delivery { id: string; url: string; payload: string; webhookSecret: string }

export interface DeliveryResult {
  /** Null when no HTTP answer was received. */
  responseCode: number | null;
  /** The body received (at most RESPONSE_LIMIT bytes), or why the call failed. */
  response: string;
  notifiedAt: Date;
  respondedAt: Date | null;
}

export interface DeliveryOptions {
  timeoutMs: number;
  allowPrivate: boolean;
  agents: { http: http.Agent; https: https.Agent };
  /** Aborts the call early (the worker is stopping). */
  signal: AbortSignal;
}

/**
 * One POST of a notification (spec 6.3): the stored payload, byte for byte, with a signature.
 * Redirects are not followed (they would skip the address check); never throws.
 */
export async function deliver(d: Delivery, opts: DeliveryOptions): Promise<DeliveryResult> {
  const notifiedAt = new Date();
  const timeout = AbortSignal.timeout(opts.timeoutMs);
  try {
    const url = new URL(d.url);
    const host = bareHost(url.hostname);
    if (!opts.allowPrivate && net.isIP(host) && !isPublicAddress(host)) throw new PrivateAddressError(host, host);
    const { status, body } = await post(url, d, AbortSignal.any([timeout, opts.signal]), opts);
    return { responseCode: status, response: body, notifiedAt, respondedAt: new Date() };
  } catch (err) {
    return { responseCode: null, response: describe(err, timeout, opts), notifiedAt, respondedAt: null };
  }
}

function describe(err: unknown, timeout: AbortSignal, opts: DeliveryOptions): string {
  if (timeout.aborted) return `no answer within ${opts.timeoutMs} ms`;
  if (opts.signal.aborted) return 'delivery interrupted: the worker stopped';
  if (err instanceof PrivateAddressError) return `refused: ${err.message}`;
  const e = err as NodeJS.ErrnoException & { hostname?: string };
  if (UNRESOLVED.has(e.code ?? '')) return `host ${e.hostname ?? '?'} could not be resolved (${e.code}); it is resolved and checked again at the next attempt`;
  return e.code && !e.message.includes(e.code) ? `${e.code}: ${e.message}` : String(e.message ?? err);
}

function post(url: URL, d: Delivery, signal: AbortSignal, opts: DeliveryOptions): Promise<{ status: number; body: string }> {
  const body = Buffer.from(d.payload, 'utf8');
  const secure = url.protocol === 'https:';
  return new Promise((resolve, reject) => {
    const req = (secure ? https : http).request(url, {
      method: 'POST', signal, agent: secure ? opts.agents.https : opts.agents.http,
      lookup: opts.allowPrivate ? undefined : guardedLookup,
      headers: {
        'content-type': 'application/json', 'content-length': body.length, 'user-agent': USER_AGENT,
        // `t=…,v1=…` (lib/webhook-signature.ts), signed per attempt: t is when this call was made.
        [SIGNATURE_HEADER]: signWebhook(d.payload, d.webhookSecret), [NOTIFICATION_ID_HEADER]: d.id,
      },
    }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      const done = () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).subarray(0, RESPONSE_LIMIT).toString('utf8') });
      res.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        size += chunk.length;
        if (size >= RESPONSE_LIMIT) { done(); res.destroy(); }
      });
      res.on('end', done);
      res.on('error', reject);
      res.on('close', () => { if (!res.complete) reject(new Error('the connection closed before the answer was complete')); });
    });
    req.on('error', reject);
    req.end(body);
  });
}
