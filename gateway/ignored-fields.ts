// Unknown fields in accepted frames are ignored (firmware adds fields before the platform knows them),
// but counted per field name and logged once per device, so an operator sees a new field or a typo.
// Both with bounded memory: a device can send any number of distinct names.
import type { Logger } from '../lib/logger.js';
import type { GatewayMetrics } from './metrics.js';

/** Distinct field names given their own metric label; later names count as "other" (Prometheus cardinality). */
const MAX_FIELD_LABELS = 50;
/** Devices remembered as already logged; the oldest is forgotten beyond this (it may be logged again). */
const MAX_LOGGED_DEVICES = 10_000;
const LABEL_RE = /^[A-Za-z][A-Za-z0-9_.-]{0,63}$/;

export function createIgnoredFieldsTracker(metrics: GatewayMetrics, log: Logger) {
  const labels = new Set<string>();
  const logged = new Set<string>();
  const labelOf = (field: string) => {
    if (labels.has(field)) return field;
    if (labels.size >= MAX_FIELD_LABELS || !LABEL_RE.test(field)) return 'other';
    labels.add(field);
    return field;
  };
  return {
    note(deviceId: string, fields: string[]): void {
      if (!fields.length) return;
      for (const field of fields) metrics.ignoredFields.inc({ field: labelOf(field) });
      if (logged.has(deviceId)) return;
      if (logged.size >= MAX_LOGGED_DEVICES) logged.delete(logged.values().next().value as string);
      logged.add(deviceId);
      const sample = [...new Set(fields)].slice(0, 10).map((f) => f.slice(0, 64));
      log.info({ deviceId, fields: sample }, 'unknown frame fields ignored (logged once per device)');
    },
  };
}
