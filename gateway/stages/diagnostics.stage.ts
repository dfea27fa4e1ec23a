import type { NewEvent } from '../../db/repositories/events.repository.js';
import { dtcInfo, type DtcInfo } from '../../db/diagnostics/dtc-info.js';
import { recomputeOccurrences, upsertCodes, type DtcSpan } from '../../db/diagnostics/dtc.sql.js';
import { batteryReadings, storeReadings, type ReadingRow } from '../../db/diagnostics/battery.js';
import { isLateFrom, type DeviceBatch, type StageFactory, type EventStage } from '../ingest.types.js';

/** Where each device's trouble-code history must be re-derived: from its oldest frame in the batch with `dtcs`. */
function dtcSpans(devices: DeviceBatch[]): DtcSpan[] {
  return devices.flatMap((d) => {
    const first = d.messages.find((m) => m.dtcs !== null);
    return first ? [{ deviceId: d.deviceId, from: first.timestamp, late: isLateFrom(d, first, true) }] : [];
  });
}

function codesSeen(devices: DeviceBatch[]): DtcInfo[] {
  const numbers = new Set(devices.flatMap((d) => d.messages.flatMap((m) => m.dtcs ?? [])));
  return [...numbers].flatMap((n) => { const info = dtcInfo(n); return info ? [info] : []; });
}

function readingRows(devices: DeviceBatch[]): ReadingRow[] {
  return devices.flatMap((d) => d.messages.flatMap((m) => (m.vehicleId
    ? batteryReadings(m).map((r) => ({ ...r, vehicleId: m.vehicleId!, deviceId: d.deviceId, ts: m.timestamp, messageId: m.id }))
    : [])));
}

/**
 * Diagnostics (docs/concepts/diagnostics-and-collisions.md): trouble-code occurrences with dtc-on / dtc-off events, and
 * battery readings. Four statements per batch for all its devices: code records, occurrences, event diff, readings. A
 * frame without `dtcs` says nothing about codes; a late frame with `dtcs` re-derives its device's codes from its time
 * on (db/diagnostics/dtc.sql.ts), keeping the events the data still implies, within the bound of
 * lateRecomputeMaxMessages and lateRecomputeMaxAgeMs.
 */
export const diagnosticsStage: StageFactory<EventStage> = ({ config }) => ({
  name: 'diagnostics',
  async apply({ trx, devices }) {
    await storeReadings(trx, readingRows(devices));
    const spans = dtcSpans(devices);
    if (!spans.length) return [];
    await upsertCodes(trx, codesSeen(devices));
    const rows = await recomputeOccurrences(trx, spans, { maxMessages: config.lateRecomputeMaxMessages, maxAgeMs: config.lateRecomputeMaxAgeMs });
    return rows.map((r): NewEvent => ({
      deviceId: r.deviceId, vehicleId: r.vehicleId, timestamp: r.ts, eventType: r.eventType,
      objectType: 'vehicle', objectId: r.vehicleId, meta: { code: r.codeId },
    }));
  },
});
