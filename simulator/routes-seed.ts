// Seeds the routes table from routes-data/ (idempotent upsert by id), so GET /routes lists the
// stored routes and runs can drive them. Called when the dummies API module registers and when
// the run scheduler starts, whichever comes first in a process; both may run.
import type { RoutesRepository } from '../db/repositories/routes.repository.js';
import { DEFAULT_ROUTES_DIR, loadStoredRoutes } from './route.js';

export async function seedStoredRoutes(routes: RoutesRepository, dir: string = DEFAULT_ROUTES_DIR): Promise<number> {
  const stored = await loadStoredRoutes(dir);
  await routes.seed(stored);
  return stored.length;
}
