import type { Knex } from 'knex';
import { applicationsRepository } from './repositories/applications.repository.js';
import { devicesRepository } from './repositories/devices.repository.js';
import { vehiclesRepository } from './repositories/vehicles.repository.js';
import { transactionsRepository } from './repositories/transactions.repository.js';
import { eventsRepository } from './repositories/events.repository.js';
import { ingestRepository } from './repositories/ingest.repository.js';
import { rulesRepository } from './repositories/rules.repository.js';
import { eventsQueryRepository } from './repositories/events-query.js';
import { subscriptionsRepository } from './repositories/subscriptions.repository.js';
import { notificationsRepository } from './repositories/notifications.repository.js';
import { telemetryRepository } from './repositories/telemetry.repository.js';
import { routesRepository } from './repositories/routes.repository.js';
import { dummiesRepository } from './repositories/dummies.repository.js';
import { runsRepository } from './repositories/runs.repository.js';
import { runLeasesRepository } from './repositories/run-leases.repository.js';
import { diagnosticsRepository } from './repositories/diagnostics.repository.js';
import { collisionsRepository } from './repositories/collisions.repository.js';
import { tripsRepository } from './trips/trips.repository.js';
import { odometersRepository } from './distance/odometers.repository.js';
import { exportsRepository } from './repositories/exports.repository.js';
import { commandsRepository } from './commands/commands.repository.js';
import { presenceRepository } from './presence/presence.repository.js';

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
    ingest: ingestRepository(knex),
    rules: rulesRepository(knex),
    eventsQuery: eventsQueryRepository(knex),
    subscriptions: subscriptionsRepository(knex),
    notifications: notificationsRepository(knex),
    telemetry: telemetryRepository(knex),
    routes: routesRepository(knex),
    dummies: dummiesRepository(knex),
    runs: runsRepository(knex),
    runLeases: runLeasesRepository(knex),
    diagnostics: diagnosticsRepository(knex),
    collisions: collisionsRepository(knex),
    trips: tripsRepository(knex),
    odometers: odometersRepository(knex),
    exports: exportsRepository(knex),
    commands: commandsRepository(knex),
    presence: presenceRepository(knex),
  };
}
export type Repositories = ReturnType<typeof repositories>;
