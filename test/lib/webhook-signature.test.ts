import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { signWebhook, verifyWebhook } from '../../lib/webhook-signature.js';

// The receiver's side, written out: HMAC-SHA256 of "<t>.<body>" with the secret's text, as
// docs/concepts/rules-events-webhooks.md tells integrators to verify it.
const expected = (t: number, body: string, secret: string) =>
  `t=${t},v1=${createHmac('sha256', secret).update(`${t}.${body}`).digest('hex')}`;

describe('webhook signatures', () => {
  const body = JSON.stringify({ notification: { id: 'n1', event: { note: 'größer als ∞' } } });

  it('signs text and its UTF-8 bytes alike, as the receiver computes it', () => {
    expect(signWebhook(body, 'whsec_a', 1_764_000_000)).toBe(expected(1_764_000_000, body, 'whsec_a'));
    expect(signWebhook(Buffer.from(body, 'utf8'), 'whsec_a', 1_764_000_000)).toBe(expected(1_764_000_000, body, 'whsec_a'));
  });

  it('keys each signature with its own secret, however many secrets are in use', () => {
    // more secrets than the key cache keeps, then the first ones again
    const secrets = Array.from({ length: 1_100 }, (_, i) => `whsec_${i}`);
    for (const s of [...secrets, ...secrets.slice(0, 5)]) expect(signWebhook(body, s, 1)).toBe(expected(1, body, s));
    expect(signWebhook(body, 'whsec_1', 1)).not.toBe(signWebhook(body, 'whsec_2', 1));
  });

  it('verifies what it signed and refuses another secret', () => {
    const header = signWebhook(body, 'whsec_a');
    expect(verifyWebhook(body, header, 'whsec_a')).toMatchObject({ ok: true });
    expect(verifyWebhook(body, header, 'whsec_b')).toEqual({ ok: false, reason: 'signature does not match the body' });
  });
});
