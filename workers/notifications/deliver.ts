import net from 'node:net';
import { LRUCache } from 'lru-cache';
import { Agent, type Dispatcher } from 'undici';
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
  /** The worker's HTTP client (webhookClient). */
  client: WebhookClient;
  /** Aborts the call early (the worker is stopping). */
  signal: AbortSignal;
}

/** Where a receiver's URL posts to, read once per URL: a worker posts to the same few URLs over and over. */
interface Target {
  origin: string;
  path: string;
  /** `user:password@` in the URL, as Basic credentials (browsers and node:http send them so). */
  authorization: string | null;
  /** Why the URL is refused without a call: its host is a non-public address literal (names are checked at connect). */
  refused: PrivateAddressError | null;
}

/** The worker's HTTP client and what every call through it shares. */
export interface WebhookClient {
  dispatcher: Agent;
  timeoutMs: number;
  allowPrivate: boolean;
  target(url: string): Target;
  close(): Promise<void>;
}

/**
 * The worker's HTTP client: undici, keep-alive connections per receiver's origin, each connected within the delivery
 * timeout and, unless private receivers are allowed, to an address the guard let through (resolved at every new
 * connection, so a host that later resolves to a private address is refused). With node:http's client the same calls
 * cost about twice the CPU (docs/development/performance.md).
 */
export function webhookClient(o: { timeoutMs: number; allowPrivate: boolean }): WebhookClient {
  const dispatcher = new Agent({ connect: { timeout: o.timeoutMs, ...(o.allowPrivate ? {} : { lookup: guardedLookup }) } });
  const targets = new LRUCache<string, Target>({ max: 1024 });
  return {
    dispatcher, timeoutMs: o.timeoutMs, allowPrivate: o.allowPrivate,
    target(url) {
      let t = targets.get(url);
      if (!t) targets.set(url, (t = targetOf(url, o.allowPrivate)));
      return t;
    },
    close: () => dispatcher.destroy(),
  };
}

function targetOf(text: string, allowPrivate: boolean): Target {
  const url = new URL(text);
  const host = bareHost(url.hostname);
  const refused = !allowPrivate && net.isIP(host) && !isPublicAddress(host) ? new PrivateAddressError(host, host) : null;
  const authorization = url.username || url.password
    ? `Basic ${Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString('base64')}`
    : null;
  return { origin: url.origin, path: url.pathname + url.search, authorization, refused };
}

/** The call took longer than the delivery timeout. */
class DeliveryTimeout extends Error {}
/** The worker stopped while the call was in flight. */
class DeliveryInterrupted extends Error {}

/**
 * Calls in flight per stopping signal, stopped together when it aborts: one listener per signal, not one per call
 * (with AbortSignal.timeout and AbortSignal.any per call, signals and listeners were a large part of a delivery's CPU).
 */
const inFlight = new WeakMap<AbortSignal, Set<Call>>();

/** Has `call` stopped when the signal aborts; returns what forgets it. */
function track(signal: AbortSignal, call: Call): () => void {
  let calls = inFlight.get(signal);
  if (!calls) {
    const set = new Set<Call>();
    signal.addEventListener('abort', () => { for (const c of set) c.stop(new DeliveryInterrupted()); }, { once: true });
    inFlight.set(signal, set);
    calls = set;
  }
  calls.add(call);
  return () => calls.delete(call);
}

/**
 * One POST of a notification: the stored payload, byte for byte, with a signature.
 * Redirects are not followed (they would skip the address check); never throws.
 */
export async function deliver(d: Delivery, opts: DeliveryOptions): Promise<DeliveryResult> {
  const notifiedAt = new Date();
  try {
    if (opts.signal.aborted) throw new DeliveryInterrupted();
    const target = opts.client.target(d.url);
    if (target.refused) throw target.refused;
    const { status, body } = await post(target, d, opts);
    return { responseCode: status, response: body, notifiedAt, respondedAt: new Date() };
  } catch (err) {
    return { responseCode: null, response: describe(err, opts), notifiedAt, respondedAt: null };
  }
}

function describe(err: unknown, opts: DeliveryOptions): string {
  if (err instanceof DeliveryTimeout) return `no answer within ${opts.client.timeoutMs} ms`;
  if (err instanceof DeliveryInterrupted) return 'delivery interrupted: the worker stopped';
  if (err instanceof PrivateAddressError) return `refused: ${err.message}`;
  const e = err as NodeJS.ErrnoException & { hostname?: string };
  if (UNRESOLVED.has(e.code ?? '')) return `host ${e.hostname ?? '?'} could not be resolved (${e.code}); it is resolved and checked again at the next attempt`;
  if (e.code === 'UND_ERR_SOCKET') return 'the connection closed before the answer was complete';
  return e.code && !e.message.includes(e.code) ? `${e.code}: ${e.message}` : String(e.message ?? err);
}

/**
 * One call, driven by undici's dispatcher: the answer's status and first RESPONSE_LIMIT bytes, or why it failed. It
 * settles once: at the answer's end (or its limit), an error, or `stop` — at once, even while its connection is still
 * being opened (the connection is then cut as soon as it is, or fails within the connect timeout).
 */
class Call implements Dispatcher.DispatchHandlers {
  untrack: () => void = () => {};
  private abort: ((err?: Error) => void) | null = null;
  /** Why the call was cut short, if it was: that, not the socket error the cut causes, is the call's outcome. */
  private cause: Error | null = null;
  private settled = false;
  private status = 0;
  private readonly chunks: Buffer[] = [];
  private size = 0;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly resolve: (answer: { status: number; body: string }) => void,
    private readonly reject: (err: unknown) => void,
    timeoutMs: number,
  ) {
    // The whole call, connection to the answer's last byte, is bounded.
    this.timer = setTimeout(() => this.stop(new DeliveryTimeout()), timeoutMs);
  }

  stop(why: Error): void {
    this.cause ??= why;
    this.abort?.(why);
    this.fail(why);
  }

  onConnect(abort: (err?: Error) => void): void {
    this.abort = abort;
    if (this.cause) abort(this.cause);
  }

  onHeaders(statusCode: number): boolean {
    this.status = statusCode; // the last of any 1xx answers and the final one
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.settled) return true;
    this.chunks.push(chunk);
    this.size += chunk.length;
    if (this.size >= RESPONSE_LIMIT) {
      this.answer();
      this.abort?.(new Error('answer past the response limit'));
    }
    return true;
  }

  onComplete(): void {
    this.answer();
  }

  onError(err: Error): void {
    this.fail(this.cause ?? err);
  }

  private answer(): void {
    if (!this.end()) return;
    this.resolve({ status: this.status, body: Buffer.concat(this.chunks).subarray(0, RESPONSE_LIMIT).toString('utf8') });
  }

  private fail(err: unknown): void {
    if (this.end()) this.reject(err);
  }

  private end(): boolean {
    if (this.settled) return false;
    this.settled = true;
    clearTimeout(this.timer);
    this.untrack();
    return true;
  }
}

function post(target: Target, d: Delivery, opts: DeliveryOptions): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const call = new Call(resolve, reject, opts.client.timeoutMs);
    call.untrack = track(opts.signal, call);
    const headers: Record<string, string> = {
      'content-type': 'application/json', 'user-agent': USER_AGENT,
      // `t=…,v1=…` (lib/webhook-signature.ts), signed per attempt: t is when this call was made.
      [SIGNATURE_HEADER]: signWebhook(d.body, d.webhookSecret), [NOTIFICATION_ID_HEADER]: d.id,
    };
    if (target.authorization) headers.authorization = target.authorization;
    try {
      opts.client.dispatcher.dispatch({ origin: target.origin, path: target.path, method: 'POST', headers, body: d.body }, call);
    } catch (err) {
      call.onError(err as Error);
    }
  });
}
