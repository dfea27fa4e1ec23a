import type { NewEvent } from '../../db/repositories/events.repository.js';
import { impactMagnitudeG, recomputeCollisions, type CollisionBatch } from '../../db/safety/collisions.sql.js';
import { isLate, type DeviceBatch, type IngestedMessage, type StageFactory, type EventStage } from '../ingest.types.js';

/**
 * Where a device's collisions must be re-derived from, or undefined when its batch cannot change them. A
 * batch of new frames changes them only through a candidate sample (a reported collision, or an impact at or
 * above the threshold: the statement's own test, done here first, so that ordinary driving costs no
 * statement — issue 13). A late frame may give an older stored sample the speed it lacked, so a batch with
 * late frames re-derives from its first frame with `accel` or `collision`, as before.
 */
function spanStart(d: DeviceBatch, impactG: number): IngestedMessage | undefined {
  // a frame at the newest stored millisecond may still be the speed a stored sample there lacked
  const late = isLate(d, true);
  const accel = (m: IngestedMessage) => m.data.accel as Record<string, number> | undefined;
  if (late) return d.messages.find((m) => m.collision !== null || accel(m) !== undefined);
  return d.messages.find((m) => m.collision !== null || (accel(m) !== undefined && !(impactMagnitudeG(accel(m)!) < impactG - 1e-9)));
}

/**
 * Collisions (issue 12, spec 2.14, 4.11): a frame reporting a collision, or an accelerometer impact while
 * moving, makes one collision per impact and a `collision` event. Two statements per batch for all devices
 * whose batch may change them (spanStart), none when no device's may (db/safety/collisions.sql.ts); late
 * frames re-derive their span, within the bound of lateRecomputeMaxMessages and lateRecomputeMaxAgeMs.
 */
export const collisionsStage: StageFactory<EventStage> = ({ config }) => ({
  name: 'collisions',
  async apply({ trx, devices }) {
    const batches: CollisionBatch[] = devices.flatMap((d) => {
      const first = spanStart(d, config.collisionImpactG);
      return first ? [{ deviceId: d.deviceId, minTs: first.timestamp, late: isLate(d, true) }] : [];
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
