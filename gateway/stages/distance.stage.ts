import type { NewEvent } from '../../db/repositories/events.repository.js';
import { distancePart, firings, type TriggerFiring } from '../../db/distance/triggers.sql.js';
import { urlForConfig, type UrlFor } from '../../db/rules/rule-copy.js';
import { plannedStage, type StageContext, type StageFactory, type EventStage, type StagePlan } from '../ingest.types.js';

/** The distance-trigger event: object `odometer-trigger`, meta with the trigger and the estimate. */
export function triggerEvent(url: UrlFor, f: TriggerFiring): NewEvent {
  return {
    deviceId: f.deviceId, vehicleId: f.vehicleId, applicationId: f.applicationId, timestamp: f.ts,
    eventType: 'distance-trigger', objectType: 'odometer-trigger', objectId: f.triggerId,
    meta: {
      odometerTrigger: {
        id: f.triggerId, vehicleId: f.vehicleId, type: f.type, threshold: f.thresholdM, unit: 'm', events: f.events,
        links: {
          self: url('distance', `/api/v1/odometer_triggers/${f.triggerId}`),
          vehicle: url('platform', `/api/v1/vehicles/${f.vehicleId}`),
        },
      },
      estimatedOdometer: Math.round(f.estimatedOdometer * 100) / 100,
    },
  };
}

/**
 * Distance (docs/concepts/distance-and-odometers.md): each message's step is measured and added to its vehicle's
 * travelled total, then the odometer triggers the batch reached fire. One statement per batch for all its devices
 * (db/distance/steps.sql.ts + triggers.sql.ts); a late frame re-measures only itself and its successor, and a trigger's
 * target moves past what fired, so nothing fires twice. Runs last: it needs the vehicle associations. Its statement
 * shares a round trip with the trips continuation (`plan`).
 */
export const distanceStage: StageFactory<EventStage> = ({ config }) => {
  const url = urlForConfig(config);
  const plan = ({ devices }: StageContext): StagePlan => ({
    part: distancePart(devices),
    after: async (rows) => firings(rows).map((f) => triggerEvent(url, f)),
  });
  return plannedStage('distance', plan);
};
