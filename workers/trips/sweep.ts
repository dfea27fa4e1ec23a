import type { Part, PartDeps } from '../../db/part.js';
import { sweepSilentTrips } from '../../db/trips/segment.js';
import { every } from '../../lib/periodic.js';

/**
 * Closes the trips of devices that fell silent without a shutdown: every `tripSweepMs`, one
 * statement closes every open trip that no batch advanced for `tripGapMs` (end reason `silent`), then its
 * preview, report card and trip-stopped / trip-completed events follow as at ingest. The events go through
 * events.insert (notifications, handed to this process's delivery worker when one runs here) and the bus. Several processes may sweep at
 * once: the UPDATE's row locks let each trip close once.
 */
export async function startTripSweep(deps: PartDeps): Promise<Part> {
  const { config, db, repos, bus, log } = deps;
  const sweep = every(Math.max(100, config.tripSweepMs), async () => {
    try {
      const events = await db.knex.transaction(async (trx) =>
        repos.events.insert(await sweepSilentTrips(trx, config.tripGapMs), trx, bus.handOffLeaseMs()));
      if (events.length) bus.publishEvents(events);
    } catch (err) {
      log.error({ err }, 'trip sweep failed');
    }
  });
  return { name: 'trip-sweep', close: () => sweep.stop() };
}
