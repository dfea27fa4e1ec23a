import type { ApiPlugin } from '../context.js';
import devicesRoutes from './platform/devices.routes.js';
import vehiclesRoutes from './platform/vehicles.routes.js';
import transactionsRoutes from './platform/transactions.routes.js';
import rulesRoutes from './rules/rules.routes.js';
import eventsRoutes from './events/events.routes.js';
import subscriptionsRoutes from './subscriptions/subscriptions.routes.js';
import telemetryRoutes from './telemetry/telemetry.routes.js';
import dummiesRoutes from './dummies/dummies.routes.js';
import diagnosticsRoutes from './diagnostics/diagnostics.routes.js';
import collisionsRoutes from './collisions/collisions.routes.js';
import tripsRoutes from './trips/trips.routes.js';
import reportCardsRoutes from './report-cards/report-cards.routes.js';
import distanceRoutes from './distance/distance.routes.js';
import exportsRoutes from './exports/exports.routes.js';
import commandsRoutes from './commands/commands.routes.js';

/** The modules served under /api/v1, one per capability, in one explicit list (docs/development/architecture.md). */
export const API_MODULES: ApiPlugin[] = [
  devicesRoutes,
  vehiclesRoutes,
  transactionsRoutes,
  rulesRoutes,
  eventsRoutes,
  subscriptionsRoutes,
  telemetryRoutes,
  dummiesRoutes,
  diagnosticsRoutes,
  collisionsRoutes,
  tripsRoutes,
  reportCardsRoutes,
  distanceRoutes,
  exportsRoutes,
  commandsRoutes,
];
