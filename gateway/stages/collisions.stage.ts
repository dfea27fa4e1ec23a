import type { NewEvent } from '../../db/repositories/events.repository.js';
import { recomputeCollisions, type CollisionBatch } from '../../db/safety/collisions.sql.js';
import type { StageFactory } from '../ingest.types.js';

/**
 * Collisions (issue 12, spec 2.14, 4.11): a frame reporting a collision, or an accelerometer impact while
 * moving, makes one collision per impact and a `collision` event. Two statements per batch for all devices
 * whose batch carried `accel` or `collision` (db/safety/collisions.sql.ts); late frames re-derive their span.
 */
export const collisionsStage: StageFactory = ({ config }) => ({
  name: 'collisions',
  async apply({ trx, devices }) {
    const batches: CollisionBatch[] = devices.flatMap((d) => {
      const first = d.messages.find((m) => m.collision !== null || m.data.accel !== undefined);
      return first ? [{ deviceId: d.deviceId, minTs: first.timestamp }] : [];
    });
    const rows = await recomputeCollisions(trx, batches, {
      impactG: config.collisionImpactG, minSpeedKmh: config.collisionMinSpeedKmh, mergeMs: config.collisionMergeMs,
    });
    return rows.map((r): NewEvent => ({
      deviceId: r.deviceId, vehicleId: r.vehicleId, timestamp: r.ts, eventType: 'collision',
      objectType: 'vehicle', objectId: r.vehicleId, meta: null,
    }));
  },
});
