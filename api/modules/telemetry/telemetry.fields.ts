import { isParameter } from '../../../lib/catalog.js';
import { ValidationError } from '../../../lib/errors.js';
import type { FieldSelection } from '../../../db/repositories/telemetry.repository.js';

/** Message keys outside the parameter catalog (lib/catalog.ts) that can be asked for too. */
const MESSAGE_KEYS = new Set(['location', 'accel']);

const isField = (key: string) => isParameter(key) || MESSAGE_KEYS.has(key);

function splitList(raw: string | undefined): string[] {
  const keys = (raw ?? '').split(',').map((k) => k.trim()).filter(Boolean);
  return [...new Set(keys)];
}

function checkKnown(keys: string[]): string[] {
  const unknown = keys.filter((k) => !isField(k));
  if (unknown.length) {
    const names = unknown.map((k) => `"${k}"`).join(', ');
    throw new ValidationError(`fields: unknown parameter${unknown.length > 1 ? 's' : ''} ${names}`);
  }
  return keys;
}

/** Locations `fields`: `all`, a comma-separated list of parameter keys, or absent/empty (= none). */
export function parseLocationFields(raw: string | undefined): FieldSelection {
  const keys = splitList(raw);
  if (keys.includes('all')) return 'all';
  return checkKnown(keys);
}

/**
 * Snapshots `fields`: `all` (every parameter the message holds) or a comma-separated list of parameter keys,
 * required. Given twice (a trip's `snapshots` link carries `fields=all`, and the SDK appends its own), the last wins.
 */
export function parseSnapshotFields(raw: string | string[] | undefined): FieldSelection {
  const keys = splitList(Array.isArray(raw) ? raw[raw.length - 1] : raw);
  if (!keys.length) {
    throw new ValidationError('fields is required: `all`, or a comma-separated list of parameter keys (e.g. fields=rpm,vehicleSpeed)');
  }
  if (keys.includes('all')) return 'all';
  return checkKnown(keys);
}

/** The `fields` value the `prior` link carries, so the next page keeps the same selection. */
export function fieldsParam(fields: FieldSelection): string | undefined {
  if (fields === 'all') return 'all';
  return fields.length ? fields.join(',') : undefined;
}
