import type { StageFactory } from './ingest.types.js';
import { vehiclesStage } from './stages/vehicles.stage.js';
import { deviceEventsStage } from './stages/device-events.stage.js';
import { rulesStage } from './stages/rules.stage.js';
import { tripsStage } from './stages/trips.stage.js';
import { diagnosticsStage } from './stages/diagnostics.stage.js';
import { collisionsStage } from './stages/collisions.stage.js';
import { distanceStage } from './stages/distance.stage.js';

export type { DeviceBatch, IngestedMessage, IngestStage, StageContext, StageDeps, StageFactory } from './ingest.types.js';

/**
 * What happens to stored messages, in order, inside each batch transaction (traccar's explicit
 * pipeline). `vehicles` comes first: it sets each message's vehicleId for the stages after it.
 * Each capability adds its stage here.
 */
export const INGEST_STAGES: StageFactory[] = [
  vehiclesStage,
  deviceEventsStage,
  rulesStage,
  diagnosticsStage,
  collisionsStage,
  // trips and distance read nothing the other writes: their first statements share one round trip (`plan`)
  tripsStage,
  distanceStage,
];
