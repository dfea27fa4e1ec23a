import { LRUCache } from 'lru-cache';
import type { VehicleDetails } from '../../db/repositories/vehicles.repository.js';
import { associationsOf, associationsPart, type Association } from '../../db/repositories/ingest.repository.js';
import type { DeviceBatch, IngestedMessage, StageFactory, EventStage } from '../ingest.types.js';
import { startVinDecoder } from '../vin.decoder.js';

/** Decoded details (and VINs known to have a vehicle) kept from prepare to apply; bounded, least recent dropped first. */
const CACHE = 1000;

/**
 * Per device, its frames carrying a VIN, oldest first; round k holds every device's k-th one (one statement per
 * round, whatever the number of devices: a batch usually has one VIN frame, a startup, per device).
 */
function vinRounds(devices: DeviceBatch[]): { deviceId: string; m: IngestedMessage & { vin: string } }[][] {
  const rounds: { deviceId: string; m: IngestedMessage & { vin: string } }[][] = [];
  for (const d of devices) {
    let k = 0;
    for (const m of d.messages) if (m.vin) (rounds[k++] ??= []).push({ deviceId: d.deviceId, m: m as IngestedMessage & { vin: string } });
  }
  return rounds;
}

/**
 * Vehicles (docs/concepts/vehicles.md): a frame carrying a VIN puts the device in that vehicle from the frame's time
 * on, creating the vehicle (decoded offline) when it is new. Then every message of the batch gets the vehicle the
 * device was in at its timestamp, for the stages after this one. Set-based: one statement finds or creates the vehicles
 * of all the batch's VINs, one per round of VIN frames records the associations, one reads the associations in force.
 */
export const vehiclesStage: StageFactory<EventStage> = ({ repos, log }) => {
  const decoder = startVinDecoder(log);
  const details = new LRUCache<string, VehicleDetails>({ max: CACHE });
  const known = new LRUCache<string, true>({ max: CACHE });

  return {
    name: 'vehicles',
    // Decoding happens here, outside the transaction: it takes hundreds of milliseconds per new VIN.
    async prepare(devices) {
      const vins = [...new Set(devices.flatMap((d) => d.messages.flatMap((m) => (m.vin ? [m.vin] : []))))]
        .filter((vin) => !details.has(vin) && !known.has(vin));
      if (!vins.length) return;
      const existing = await repos.vehicles.knownVins(vins);
      for (const vin of vins) {
        if (existing.has(vin)) known.set(vin, true);
        else details.set(vin, await decoder.decode(vin));
      }
    },
    // Without a VIN frame in the batch nothing this stage writes comes before its read of the associations.
    early: (candidates) => (candidates.some((d) => d.messages.some((m) => m.vin)) ? null : associationsPart(spansOf(candidates))),
    async apply({ trx, devices, early }) {
      const rounds = vinRounds(devices);
      if (rounds.length) {
        const vins = [...new Set(rounds.flat().map((r) => r.m.vin))];
        // A VIN neither known nor decoded (the caches are bounded) is decoded now; a known one needs no details.
        const rows = await Promise.all(vins.map(async (vin) => ({
          vin, details: known.has(vin) ? null : details.get(vin) ?? await decoder.decode(vin),
        })));
        const vehicleOf = await repos.vehicles.vehiclesForVins(rows, trx);
        for (const vin of vins) known.set(vin, true);
        for (const round of rounds) {
          await repos.ingest.associateMany(round.map((r) => ({ deviceId: r.deviceId, vehicleId: vehicleOf.get(r.m.vin)!, at: r.m.timestamp })), trx);
        }
      }
      const read = rounds.length ? null : early; // (early runs only for batches without VIN frames)
      // lastStartup is read from the startup events of the caller's devices: nothing to keep here.
      assignVehicles(devices, read ? associationsOf(read) : await repos.ingest.associationsDuring(spansOf(devices), trx));
      return [];
    },
    close: () => decoder.close(),
  };
};
/** Each device's span of the batch (messages oldest first). */
const spansOf = (devices: DeviceBatch[]) =>
  devices.map((d) => ({ deviceId: d.deviceId, min: d.messages[0].timestamp, max: d.messages.at(-1)!.timestamp }));

/** Sets each message's vehicleId from the device's associations (both lists oldest first). */
function assignVehicles(devices: DeviceBatch[], associations: Association[]): void {
  const byDevice = new Map<string, Association[]>();
  for (const a of associations) byDevice.set(a.deviceId, [...(byDevice.get(a.deviceId) ?? []), a]);
  for (const device of devices) {
    const list = byDevice.get(device.deviceId) ?? [];
    let i = -1;
    for (const m of device.messages) {
      while (i + 1 < list.length && list[i + 1].startedAt.getTime() <= m.timestamp.getTime()) i++;
      m.vehicleId = i >= 0 ? list[i].vehicleId : null;
    }
  }
}
