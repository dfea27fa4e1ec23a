import type { VehicleDetails } from '../../db/repositories/vehicles.repository.js';
import type { Association } from '../../db/repositories/ingest.repository.js';
import type { DeviceBatch, StageFactory } from '../ingest.types.js';
import { startVinDecoder } from '../vin.decoder.js';

/** Decoded details kept for VINs seen in prepare and used in apply; bounded, oldest dropped first. */
const DETAILS_CACHE = 1000;

/**
 * Vehicles (issue 3): a frame carrying a VIN puts the device in that vehicle from the frame's time on,
 * creating the vehicle (decoded offline) when it is new. Then every message of the batch gets the
 * vehicle the device was in at its timestamp, for the stages after this one.
 */
export const vehiclesStage: StageFactory = ({ repos, log }) => {
  const decoder = startVinDecoder(log);
  const details = new Map<string, VehicleDetails>();
  const remember = (vin: string, d: VehicleDetails) => {
    details.set(vin, d);
    if (details.size > DETAILS_CACHE) details.delete(details.keys().next().value!);
  };

  return {
    name: 'vehicles',
    // Decoding happens here, outside the transaction: it takes 100-500 ms per new VIN.
    async prepare(devices) {
      const vins = new Set(devices.flatMap((d) => d.messages.flatMap((m) => (m.vin ? [m.vin] : []))));
      for (const vin of vins) {
        if (details.has(vin) || (await repos.vehicles.findByVin(vin))) continue;
        remember(vin, await decoder.decode(vin));
      }
    },
    async apply({ trx, devices }) {
      for (const device of devices) {
        for (const m of device.messages) {
          if (!m.vin) continue;
          const vin = m.vin;
          const vehicle = await repos.vehicles.upsertByVin(vin, async () => details.get(vin) ?? decoder.decode(vin), trx);
          await repos.ingest.associateAt(device.deviceId, vehicle.id, m.timestamp, trx);
        }
      }
      const spans = devices.map((d) => ({ deviceId: d.deviceId, min: d.messages[0].timestamp, max: d.messages.at(-1)!.timestamp }));
      // lastStartup is read from the startup events of the caller's devices (issue 10 item 12): nothing to keep here.
      assignVehicles(devices, await repos.ingest.associationsDuring(spans, trx));
      return [];
    },
    close: () => decoder.close(),
  };
};

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
