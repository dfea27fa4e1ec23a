import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { NOTIFICATION_ID_HEADER, SIGNATURE_HEADER, signWebhook } from '../../lib/webhook-signature.js';
import { bareHost, guardedLookup, isPublicAddress, PrivateAddressError, UNRESOLVED } from '../../lib/net-guard.js';

/** Bytes of a receiver's answer kept in `response`. */
export const RESPONSE_LIMIT = 64 * 1024;
export const USER_AGENT = 'drivewire-webhooks/1';

/** `body`: the payload's bytes, posted as they are. */
export interface Delivery { id: string; url: string; body: Buffer; webhookSecret: string }

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

/** The call took longer than the delivery timeout. */
class DeliveryTimeout extends Error {}
/** The worker stopped while the call was in flight. */
class DeliveryInterrupted extends Error {}

/**
 * Calls in flight per stopping signal, destroyed together when it aborts: one listener per signal, not one per call
 * (with AbortSignal.timeout and AbortSignal.any per call, signals and listeners were ~40 µs of a delivery's CPU).
 */
const inFlight = new WeakMap<AbortSignal, Set<(why: Error) => void>>();

/** Calls `stop` when the signal aborts, until the request closes. */
function track(signal: AbortSignal, req: http.ClientRequest, stop: (why: Error) => void): void {
  let calls = inFlight.get(signal);
  if (!calls) {
    const set = new Set<(why: Error) => void>();
    signal.addEventListener('abort', () => { for (const s of set) s(new DeliveryInterrupted()); }, { once: true });
    inFlight.set(signal, set);
    calls = set;
  }
  calls.add(stop);
  req.once('close', () => calls.delete(stop));
}

/**
 * One POST of a notification (spec 6.3): the stored payload, byte for byte, with a signature.
 * Redirects are not followed (they would skip the address check); never throws.
 */
export async function deliver(d: Delivery, opts: DeliveryOptions): Promise<DeliveryResult> {
  const notifiedAt = new Date();
  try {
    if (opts.signal.aborted) throw new DeliveryInterrupted();
    const url = new URL(d.url);
    const host = bareHost(url.hostname);
    if (!opts.allowPrivate && net.isIP(host) && !isPublicAddress(host)) throw new PrivateAddressError(host, host);
    const { status, body } = await post(url, d, opts);
    return { responseCode: status, response: body, notifiedAt, respondedAt: new Date() };
  } catch (err) {
    return { responseCode: null, response: describe(err, opts), notifiedAt, respondedAt: null };
  }
}

function describe(err: unknown, opts: DeliveryOptions): string {
  if (err instanceof DeliveryTimeout) return `no answer within ${opts.timeoutMs} ms`;
  if (err instanceof DeliveryInterrupted) return 'delivery interrupted: the worker stopped';
  if (err instanceof PrivateAddressError) return `refused: ${err.message}`;
  const e = err as NodeJS.ErrnoException & { hostname?: string };
  if (UNRESOLVED.has(e.code ?? '')) return `host ${e.hostname ?? '?'} could not be resolved (${e.code}); it is resolved and checked again at the next attempt`;
  return e.code && !e.message.includes(e.code) ? `${e.code}: ${e.message}` : String(e.message ?? err);
}

function post(url: URL, d: Delivery, opts: DeliveryOptions): Promise<{ status: number; body: string }> {
  const { body } = d;
  const secure = url.protocol === 'https:';
  return new Promise((resolve, settleError) => {
    // Why the call was cut short, if it was: that, not the socket error the cut causes, is the call's outcome.
    let cause: Error | null = null;
    const reject = (err: unknown) => settleError(cause ?? err);
    const req = (secure ? https : http).request(url, {
      method: 'POST', agent: secure ? opts.agents.https : opts.agents.http,
      lookup: opts.allowPrivate ? undefined : guardedLookup,
      headers: {
        'content-type': 'application/json', 'content-length': body.length, 'user-agent': USER_AGENT,
        // `t=…,v1=…` (lib/webhook-signature.ts), signed per attempt: t is when this call was made.
        [SIGNATURE_HEADER]: signWebhook(body, d.webhookSecret), [NOTIFICATION_ID_HEADER]: d.id,
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
    // The whole call, connection to the answer's last byte, is bounded (a promise settles once: a late reject is a no-op).
    const stop = (why: Error) => { cause ??= why; req.destroy(why); };
    const timer = setTimeout(() => stop(new DeliveryTimeout()), opts.timeoutMs);
    req.once('close', () => clearTimeout(timer));
    track(opts.signal, req, stop);
    req.on('error', reject);
    req.end(body);
  });
}
