/**
 * SQL for the vehicle a device was in at a time: its association that started last at or before that time (two
 * starting together: the newer row). `device` and `at` are SQL expressions. Every statement that stamps a vehicle
 * on something a device did (trips, trouble codes, collisions, distance steps, rule events) uses this one rule;
 * ASSOCIATIONS (db/repositories/ingest.repository.ts) orders the same way by hand, as it also needs `started_at`.
 */
export const vehicleAt = (device: string, at: string): string =>
  `(SELECT dv.vehicle_id FROM device_vehicles dv WHERE dv.device_id = ${device} AND dv.started_at <= ${at}
    ORDER BY dv.started_at DESC, dv.created_at DESC LIMIT 1)`;
