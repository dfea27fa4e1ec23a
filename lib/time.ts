import { ValidationError } from './errors.js';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})$/i;
const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;
const EPOCH_MS = /^-?\d{1,16}$/;

/**
 * Parses a `since`/`until` style value: ISO 8601, `YYYY-MM-DD` (UTC midnight) or epoch
 * milliseconds (reference-notes §3.1). Empty or absent → undefined (the SDK sends `since=`).
 */
export function parseTimeParam(name: string, value: unknown): Date | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  const text = String(value).trim();
  let ms = NaN;
  if (EPOCH_MS.test(text)) ms = Number(text);
  else if (DATE_ONLY.test(text)) ms = Date.parse(`${text}T00:00:00.000Z`);
  else if (ISO.test(text)) ms = Date.parse(text);
  if (!Number.isFinite(ms) || Math.abs(ms) > 8.64e15) {
    throw new ValidationError(
      `${name} must be an ISO 8601 timestamp, a date (YYYY-MM-DD) or epoch milliseconds, got "${text}"`,
    );
  }
  return new Date(ms);
}

/** Truncates to whole milliseconds: every stored timestamp has ms precision so `until = last − 1 ms` pages exactly. */
export function toMs(date: Date): Date {
  return new Date(Math.floor(date.getTime()));
}

export const EPOCH = new Date(0);

export function iso(date: Date | string | null | undefined): string | null {
  if (date === null || date === undefined) return null;
  return (date instanceof Date ? date : new Date(date)).toISOString();
}
