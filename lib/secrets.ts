import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Secrets issued by drivewire are 128+ bits of randomness, so a fast hash (SHA-256) is enough to
 * store them; a slow password hash would only cost every authenticated call and MQTT CONNECT.
 */
export function newSecret(bytes = 24): string {
  return randomBytes(bytes).toString('base64url');
}

export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

export function secretMatches(secret: string, hash: string): boolean {
  const a = Buffer.from(hashSecret(secret), 'hex');
  const b = Buffer.from(hash, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}

const CASE_ALPHABET = 'ABCDEFGHJKLMNPRSTUVWXYZ0123456789';
/** Case ids as printed on the reference platform's devices: `VV` + 5 characters (dummies) or more. */
export function newCaseId(length = 5): string {
  const bytes = randomBytes(length);
  return 'VV' + Array.from(bytes, (b) => CASE_ALPHABET[b % CASE_ALPHABET.length]).join('');
}

/** chipId: `VV` + 10 uppercase hex. */
export function newChipId(): string {
  return 'VV' + randomBytes(5).toString('hex').toUpperCase();
}
