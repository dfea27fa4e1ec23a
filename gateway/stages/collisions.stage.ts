import type { NewEvent } from '../../db/repositories/events.repository.js';
import { impactMagnitudeG, recomputeCollisions, type CollisionBatch } from '../../db/collisions/collisions.sql.js';
import { isLateFrom, type DeviceBatch, type IngestedMessage, type StageFactory, type EventStage } from '../ingest.types.js';

/**
 * Where a device's collisions must be re-derived from, and whether that span is late, or undefined when its batch
 * cannot change them. A batch of new frames changes them only through a candidate sample (a reported collision, or an
 * impact at or above the threshold: the statement's own test, done here first, so that ordinary driving costs no
 * statement). A late frame with `accel` or `collision` may be a sample that a stored message's speed makes a candidate,
 * or merge with a stored impact, so a span whose first such frame is late re-derives from it, whatever its magnitude.
 */
function spanStart(d: DeviceBatch, impactG: number): { from: IngestedMessage; late: boolean } | undefined {
  const accel = (m: IngestedMessage) => m.data.accel as Record<string, number> | undefined;
  const first = d.messages.find((m) => m.collision !== null || accel(m) !== undefined);
  if (!first) return undefined;
  // a frame at the newest stored millisecond may still be the speed a stored sample there lacked
  if (isLateFrom(d, first, true)) return { from: first, late: true };
  const from = d.messages.find((m) => m.collision !== null || (accel(m) !== undefined && !(impactMagnitudeG(accel(m)!) < impactG - 1e-9)));
  return from ? { from, late: false } : undefined;
}

/**
 * Collisions (docs/concepts/diagnostics-and-collisions.md): a frame reporting a collision, or an accelerometer impact
 * while moving, makes one collision per impact and a `collision` event. Two statements per batch for all devices whose
 * batch may change them (spanStart), none when no device's may (db/collisions/collisions.sql.ts); late frames re-derive
 * their span, within the bound of lateRecomputeMaxMessages and lateRecomputeMaxAgeMs.
 */
export const collisionsStage: StageFactory<EventStage> = ({ config }) => ({
  name: 'collisions',
  async apply({ trx, devices }) {
    const batches: CollisionBatch[] = devices.flatMap((d) => {
      const span = spanStart(d, config.collisionImpactG);
      return span ? [{ deviceId: d.deviceId, minTs: span.from.timestamp, late: span.late }] : [];
    });
    if (!batches.length) return [];
    const rows = await recomputeCollisions(trx, batches, {
      impactG: config.collisionImpactG, minSpeedKmh: config.collisionMinSpeedKmh, mergeMs: config.collisionMergeMs,
      maxMessages: config.lateRecomputeMaxMessages, maxAgeMs: config.lateRecomputeMaxAgeMs,
    });
    return rows.map((r): NewEvent => ({
      deviceId: r.deviceId, vehicleId: r.vehicleId, timestamp: r.ts, eventType: 'collision',
      objectType: 'vehicle', objectId: r.vehicleId, meta: null,
    }));
  },
});
