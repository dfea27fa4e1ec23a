import type { Principal, Repositories } from '../../../db/index.js';

/** A vehicle's trips and report cards come from its 20 most recent devices that the application can read. */
export const VEHICLE_RECENT_DEVICES = 20;

/**
 * The vehicle's recent devices that the application can read, checked once for a vehicle's trip or report-card
 * list. One of them makes the vehicle readable; only when there is none is the vehicle looked up on its own: it
 * may be readable through an older device (an empty list) or not at all (NotFound).
 */
export async function readableRecentDevices(repos: Repositories, app: Principal, vehicleId: string): Promise<string[]> {
  const devices = await repos.vehicles.readableDeviceIds(app, vehicleId, VEHICLE_RECENT_DEVICES);
  if (!devices.length) await repos.vehicles.requireReadable(app, vehicleId);
  return devices;
}
