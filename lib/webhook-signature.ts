import { createHmac, createSecretKey, timingSafeEqual, type KeyObject } from 'node:crypto';
import { LRUCache } from 'lru-cache';

/**
 * Webhook signatures a receiver can trust (docs/concepts/rules-events-webhooks.md), in the manner of Stripe's:
 * `x-drivewire-signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`, keyed with the
 * application's webhook secret. The timestamp is signed with the body, so a captured delivery
 * cannot be replayed once it is older than the receiver's tolerance. Receivers drop duplicates
 * (at-least-once delivery) by `x-drivewire-notification-id` / `notification.id` in the body.
 */
export const SIGNATURE_HEADER = 'x-drivewire-signature';
export const NOTIFICATION_ID_HEADER = 'x-drivewire-notification-id';
/** A receiver's default tolerance between the signed time and its clock (seconds). */
export const DEFAULT_TOLERANCE_S = 300;

/**
 * Key objects of the secrets in use: an HMAC keyed with the secret's text derives its key again each time (with the
 * string's encoding, a large part of a signature's cost).
 */
const keys = new LRUCache<string, KeyObject>({ max: 1024 });

function keyOf(secret: string): KeyObject {
  let key = keys.get(secret);
  if (!key) keys.set(secret, key = createSecretKey(Buffer.from(secret, 'utf8')));
  return key;
}

const mac = (t: number, body: string | Buffer, secret: string) =>
  createHmac('sha256', keyOf(secret)).update(`${t}.`, 'utf8').update(body).digest('hex');

/** The header value for `body` (text, or its UTF-8 bytes) signed at `t` (unix seconds, default now). */
export function signWebhook(body: string | Buffer, secret: string, t = Math.floor(Date.now() / 1000)): string {
  return `t=${t},v1=${mac(t, body, secret)}`;
}

export interface VerifyOptions {
  /** Accepted distance between the signed time and `now`, in seconds (default 300). */
  toleranceS?: number;
  /** Unix seconds; default the current time. */
  now?: number;
}

export type Verification = { ok: true; timestamp: number } | { ok: false; reason: string };

/**
 * Checks a signature header against the exact body received (the raw text, before any JSON
 * parsing). Several `v1=` entries are accepted (any one matching), for secret rotation.
 */
export function verifyWebhook(body: string, header: string | undefined | null, secret: string, opts: VerifyOptions = {}): Verification {
  if (!header) return { ok: false, reason: `no ${SIGNATURE_HEADER} header` };
  const parts = header.split(',').map((p) => p.trim().split('='));
  const t = Number(parts.find(([k]) => k === 't')?.[1]);
  const signatures = parts.filter(([k, v]) => k === 'v1' && /^[0-9a-f]{64}$/i.test(v ?? '')).map(([, v]) => v.toLowerCase());
  if (!Number.isInteger(t) || !signatures.length) return { ok: false, reason: 'malformed signature header: expected t=<unix seconds>,v1=<hex>' };
  const now = opts.now ?? Math.floor(Date.now() / 1000);
  const tolerance = opts.toleranceS ?? DEFAULT_TOLERANCE_S;
  if (Math.abs(now - t) > tolerance) return { ok: false, reason: `timestamp ${t} is outside the tolerance of ${tolerance} s` };
  const expected = Buffer.from(mac(t, body, secret), 'hex');
  const match = signatures.some((s) => timingSafeEqual(Buffer.from(s, 'hex'), expected));
  return match ? { ok: true, timestamp: t } : { ok: false, reason: 'signature does not match the body' };
}
