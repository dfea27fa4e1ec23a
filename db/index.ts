import type { Knex } from 'knex';
import { applicationsRepository } from './repositories/applications.repository.js';
import { devicesRepository } from './repositories/devices.repository.js';
import { vehiclesRepository } from './repositories/vehicles.repository.js';
import { transactionsRepository } from './repositories/transactions.repository.js';
import { eventsRepository } from './repositories/events.repository.js';
import { telemetryRepository } from './repositories/telemetry.repository.js';

export * from './connection.js';
export { migrateLatest } from './migrate.js';
export type { Principal, AppKind } from './repositories/scope.js';

/** All repositories over one knex instance; each method also takes a transaction. */
export function repositories(knex: Knex) {
  return {
    applications: applicationsRepository(knex),
    devices: devicesRepository(knex),
    vehicles: vehiclesRepository(knex),
    transactions: transactionsRepository(knex),
    events: eventsRepository(knex),
    telemetry: telemetryRepository(knex),
  };
}
export type Repositories = ReturnType<typeof repositories>;
