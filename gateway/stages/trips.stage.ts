import { advanceTripsAfter, continuePart, type TripSpan } from '../../db/trips/segment.js';
import { plannedStage, isLate, type IngestedMessage, type StageContext, type StageFactory, type EventStage, type StagePlan } from '../ingest.types.js';

/**
 * Whether a message may begin a trip: a startup, or a speed (the statement's: vehicleSpeed, else GPS speed)
 * not below the motion threshold. Anything not surely below it counts, so the test can only over-include.
 */
function mayOpen(m: IngestedMessage, motionKmh: number): boolean {
  const speed = m.data.vehicleSpeed ?? m.gps?.speed;
  return m.kind === 'startup' || (speed !== undefined && speed !== null && !(Number(speed) < motionKmh));
}

/**
 * Trips (docs/concepts/trips-and-report-cards.md): segmentation and statistics advance per batch for all its devices in
 * a constant number of statements (db/trips/segment.ts); a device whose batch holds a late frame re-derives
 * its trips from the first one the frame can touch, within a bound in messages and time past which the frame is
 * spliced into its trip or leaves the trips as they were (RecomputeBounds). Events: trip-started, trip-stopped, trip-completed. Its first
 * statement (the continuation of open trips) shares a round trip with the distance stage's (`plan`).
 */
export const tripsStage: StageFactory<EventStage> = ({ config }) => {
  const options = {
    gapMs: config.tripGapMs, stationaryMs: config.tripStationaryMs, motionKmh: config.tripMotionKmh, impactG: config.collisionImpactG,
  };
  const bounds = { maxMessages: config.lateRecomputeMaxMessages, maxAgeMs: config.lateRecomputeMaxAgeMs };
  const ignition = (ms: IngestedMessage[]) => ms.some((m) => m.kind === 'startup' || m.kind === 'shutdown');
  /** An in-order span of messages (oldest first). */
  const inOrder = (deviceId: string, ms: IngestedMessage[]): TripSpan => ({
    deviceId, firstTs: ms[0].timestamp, late: false, messageIds: ms.map((m) => m.id),
    mayOpen: ms.some((m) => mayOpen(m, config.tripMotionKmh)), ignition: ignition(ms),
  });
  const plan = ({ trx, devices }: StageContext): StagePlan => {
    if (!config.trips) return { part: null, after: async () => [] };
    const spans: TripSpan[] = devices.filter((d) => d.messages.length).map((d) => {
      // Strictly before: a frame at the newest stored millisecond continues the open trip (frames stamped
      // with Date.now() share milliseconds); re-deriving the whole trip for it would cost O(trip) per batch.
      if (!isLate(d)) return inOrder(d.deviceId, d.messages);
      const latest = d.previousLatest!.getTime();
      const late = d.messages.filter((m) => m.timestamp.getTime() < latest);
      const rest = d.messages.filter((m) => m.timestamp.getTime() >= latest);
      return {
        ...inOrder(d.deviceId, d.messages), late: true,
        parts: {
          lateIds: late.map((m) => m.id), lateFirst: late[0].timestamp, lateLast: late.at(-1)!.timestamp, lateIgnition: ignition(late),
          newest: new Date(Math.max(latest, d.messages.at(-1)!.timestamp.getTime())), rest: rest.length ? inOrder(d.deviceId, rest) : null,
        },
      };
    });
    return { part: continuePart(spans, options), after: (rows) => advanceTripsAfter(trx, spans, rows, options, bounds) };
  };
  return plannedStage('trips', plan);
};
