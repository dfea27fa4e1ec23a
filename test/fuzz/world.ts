import { randomUUID } from 'node:crypto';
import type { TestApp } from '../helpers/app.js';
import { insertMessages } from '../helpers/telemetry.factory.js';

/**
 * The objects the fuzzer aims at: one of each kind the API serves, readable by the main application, so
 * that generated path parameters and body ids can name objects that exist (and go past the 404).
 * Requests and corpus cases name them symbolically (`$ref:device`), resolved against the world of the run.
 */
export interface World {
  ids: Record<string, string>;
  /** Authorization header values by role. */
  auth: Record<AuthRole, string>;
}
export type AuthRole = 'app' | 'consumer' | 'stranger' | 'admin';

/** A route shipped in routes-data/ (always present: the dummy service lists it). */
const BACK_HOME = '8e90cf47-c6c1-486d-9ba8-194f569c7309';
const LON = -96.797;
const LAT = 32.7767;

async function call(t: TestApp, auth: string, method: 'POST' | 'PUT', url: string, payload: unknown) {
  const res = await t.app.inject({ method, url, headers: { authorization: auth }, payload: payload as object });
  if (res.statusCode >= 300) throw new Error(`fuzz world: ${method} ${url} answered ${res.statusCode} ${res.body}`);
  return res.json();
}

/** Builds the world in `t`'s fresh database through the repositories and the API itself. */
export async function buildWorld(t: TestApp): Promise<World> {
  const app = await t.make.application('enterprise');
  const consumer = await t.make.application('consumer');
  const stranger = await t.make.application('enterprise');
  const admin = `Bearer ${await t.repos.applications.createAdminToken()}`;
  const device = await t.make.device(app.principal);
  await t.repos.devices.authorize(device.id, consumer.id);
  const spare = await t.make.device(app.principal); // targets for POST /devices and admin calls
  const vehicle = await t.repos.vehicles.upsertByVin('1HGCM82633A004352', async () => ({ year: '2003', make: 'Honda', model: 'Accord' }));
  await t.repos.vehicles.associate(device.id, vehicle.id, new Date('2026-01-01T00:00:00Z'));
  const start = Date.parse('2026-01-01T10:00:00Z');
  const [message] = await insertMessages(t.db.knex, Array.from({ length: 5 }, (_, i) => ({
    deviceId: device.id, ts: new Date(start + i * 1000), location: [LON + i * 1e-4, LAT] as [number, number],
    data: { vehicleSpeed: 30 + i, rpm: 1500, batteryVoltage: 12.4 },
  })));
  const { rule } = await call(t, app.auth, 'POST', `/api/v1/devices/${device.id}/rules`,
    { rule: { name: 'depot', boundaries: [{ type: 'radius', lon: LON, lat: LAT, radius: 50 }] } });
  const { subscription } = await call(t, app.auth, 'POST', `/api/v1/devices/${device.id}/subscriptions`,
    { subscription: { eventType: 'startup', url: 'http://127.0.0.1:9/hook', appData: 'fuzz' } });
  const [event] = await t.db.knex.transaction((trx) => t.repos.events.insert([{
    deviceId: device.id, vehicleId: vehicle.id, timestamp: new Date(start), eventType: 'startup',
    objectType: 'vehicle', objectId: vehicle.id, meta: null,
  }], trx));
  const notification = await t.db.knex('notifications').where({ event_id: event.id }).first();
  const { dummy } = await call(t, app.auth, 'POST', '/api/v1/dummies', { dummy: { name: 'fuzz dummy' } });
  const { run } = await call(t, app.auth, 'POST', `/api/v1/dummies/${dummy.id}/runs`, { run: { vin: 'VV1AB2CD3EF456789', routeId: BACK_HOME } });
  // A second dummy without a run: on the first one every valid POST .../runs is a 409 (one active run).
  const { dummy: idle } = await call(t, app.auth, 'POST', '/api/v1/dummies', { dummy: { name: 'idle dummy' } });
  const { odometer } = await call(t, app.auth, 'POST', `/api/v1/vehicles/${vehicle.id}/odometers`,
    { odometer: { reading: 12000, unit: 'km', date: '2026-01-01T09:00:00Z' } });
  const { odometerTrigger } = await call(t, app.auth, 'POST', `/api/v1/vehicles/${vehicle.id}/odometer_triggers`,
    { odometerTrigger: { type: 'milestone', threshold: 1000, unit: 'km' } });
  const code = await derivedRows(t, device.id, vehicle.id, message.id);
  return {
    ids: {
      application: app.id, device: device.id, spare: spare.id, vehicle: vehicle.id, message: message.id,
      rule: rule.id, subscription: subscription.id, event: event.id, notification: notification?.id ?? randomUUID(),
      dummy: dummy.id, idle: idle.id, route: BACK_HOME, run: run.id, code: code.codeId, collision: code.collisionId, trip: code.tripId,
      owner: device.ownerId ?? randomUUID(), consumer: consumer.id,
      odometer: odometer.id, trigger: odometerTrigger.id,
    },
    auth: { app: app.auth, consumer: consumer.auth, stranger: stranger.auth, admin },
  };
}

/** A trouble-code occurrence, a collision and a trip, written as the diagnostics, collisions and trips stages write them. */
async function derivedRows(t: TestApp, deviceId: string, vehicleId: string, messageId: string) {
  const knex = t.db.knex;
  let code = await knex('dtc_codes').select('id', 'number').first();
  if (!code) {
    code = { id: randomUUID(), number: 'P0300' };
    await knex('dtc_codes').insert({ ...code, make: 'Generic', system: 'Powertrain', subsystem: 'Ignition', description: 'Random misfire' });
  }
  const ts = new Date('2026-01-01T10:00:02Z');
  await knex('dtc_occurrences').insert({ id: randomUUID(), device_id: deviceId, vehicle_id: vehicleId, code_id: code.id, number: code.number, start: ts });
  const collisionId = randomUUID();
  await knex('collisions').insert({
    id: collisionId, device_id: deviceId, vehicle_id: vehicleId, ts, last_ts: ts, message_id: messageId,
    latitude: LAT, longitude: LON, peak_g: 4.2, source: 'accelerometer',
  });
  // A completed trip, as the trips stage leaves one (start and stop points, counters at their defaults).
  const tripId = randomUUID();
  const stop = new Date('2026-01-01T10:00:04Z');
  await knex('trips').insert({
    id: tripId, device_id: deviceId, vehicle_id: vehicleId, start_ts: new Date('2026-01-01T10:00:00Z'), stop_ts: stop, last_ts: stop,
    start_reason: 'startup', end_reason: 'shutdown', start_point: knex.raw('ST_SetSRID(ST_MakePoint(?, ?), 4326)', [LON, LAT]),
    stop_point: knex.raw('ST_SetSRID(ST_MakePoint(?, ?), 4326)', [LON + 4e-4, LAT]), message_count: 5, location_count: 5, touched_at: stop,
  });
  return { codeId: code.id as string, collisionId, tripId };
}

