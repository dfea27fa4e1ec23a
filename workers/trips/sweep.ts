import type { Part, PartDeps } from '../../db/part.js';
import { sweepSilentTrips } from '../../db/trips/segment.js';

/**
 * Closes the trips of devices that fell silent without a shutdown (issue 11): every `tripSweepMs`, one
 * statement closes every open trip that no batch advanced for `tripGapMs` (end reason `silent`), then its
 * preview, report card and trip-stopped / trip-completed events follow as at ingest. The events go through
 * events.insert (notifications) and the bus (the delivery worker wakes). Several processes may sweep at
 * once: the UPDATE's row locks let each trip close once.
 */
export async function startTripSweep(deps: PartDeps): Promise<Part> {
  const { config, db, repos, bus, log } = deps;
  let running: Promise<void> | null = null;
  const sweep = async () => {
    const events = await db.knex.transaction(async (trx) => repos.events.insert(await sweepSilentTrips(trx, config.tripGapMs), trx));
    if (events.length) bus.publishEvents(events);
  };
  const tick = () => {
    if (running) return;
    running = sweep().catch((err) => log.error({ err }, 'trip sweep failed')).finally(() => { running = null; });
  };
  const timer = setInterval(tick, Math.max(100, config.tripSweepMs));
  timer.unref();
  return {
    name: 'trip-sweep',
    async close() { clearInterval(timer); await running; },
  };
}
