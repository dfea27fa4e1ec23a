import type { Knex } from 'knex';
import { offsetPage, type OffsetWindow } from '../paging.js';

/** A route as stored (the shape of routes-data/*.json, see routes-data/README.md) plus its owner. */
export interface RouteRecord {
  id: string;
  /** null: seeded from routes-data/, visible to every application. */ applicationId: string | null;
  name: string;
  description: string;
  /** Google encoded polyline, precision 5. */ polyline: string;
  messageCount: number;
  locationCount: number;
  /** m */ distanceByGPS: number;
  /** m */ distanceByVSS: number;
  /** ms */ duration: number;
  profile?: { at: number; speed: number }[];
  stops?: { at: number; seconds: number }[];
  createdAt: Date;
}
export type NewRoute = Omit<RouteRecord, 'applicationId' | 'createdAt'>;

const COLUMNS = ['id', 'application_id', 'name', 'description', 'polyline', 'message_count', 'location_count',
  'distance_by_gps', 'distance_by_vss', 'duration_ms', 'profile', 'stops', 'created_at'];

const json = (v: unknown) => (typeof v === 'string' ? JSON.parse(v) : v);

interface RouteRow {
  id: string; application_id: string | null; name: string; description: string; polyline: string; message_count: number;
  location_count: number; distance_by_gps: number; distance_by_vss: number; duration_ms: number;
  /** JSON text as written, parsed as jsonb reads it back, or null. */
  profile: string | RouteRecord['profile'] | null; stops: string | RouteRecord['stops'] | null;
  created_at: Date;
}

function toRoute(r: RouteRow): RouteRecord {
  const profile = json(r.profile);
  const stops = json(r.stops);
  return {
    id: r.id, applicationId: r.application_id, name: r.name, description: r.description, polyline: r.polyline,
    messageCount: r.message_count, locationCount: r.location_count, distanceByGPS: r.distance_by_gps,
    distanceByVSS: r.distance_by_vss, duration: r.duration_ms, createdAt: r.created_at,
    ...(profile ? { profile } : {}), ...(stops ? { stops } : {}),
  };
}

function toRow(route: NewRoute, applicationId: string | null) {
  return {
    id: route.id, application_id: applicationId, name: route.name, description: route.description ?? '',
    polyline: route.polyline, message_count: route.messageCount, location_count: route.locationCount,
    distance_by_gps: route.distanceByGPS, distance_by_vss: route.distanceByVSS, duration_ms: route.duration,
    profile: route.profile?.length ? JSON.stringify(route.profile) : null,
    stops: route.stops?.length ? JSON.stringify(route.stops) : null,
    created_at: new Date(),
  };
}

export function routesRepository(knex: Knex) {
  /** Seeded routes and the application's own. */
  const visible = (trx: Knex, applicationId: string) =>
    trx('routes').select(COLUMNS).where((q) => q.whereNull('application_id').orWhere('application_id', applicationId));

  return {
    /**
     * Upserts the routes of routes-data/ by id (idempotent): an edited file updates its route.
     * A row an application imported is never overwritten by a seed with the same id.
     */
    async seed(routes: NewRoute[], trx: Knex = knex): Promise<void> {
      if (!routes.length) return;
      await trx('routes').insert(routes.map((r) => toRow(r, null))).onConflict('id')
        .merge(['name', 'description', 'polyline', 'message_count', 'location_count', 'distance_by_gps',
          'distance_by_vss', 'duration_ms', 'profile', 'stops'])
        .where('routes.application_id', null);
    },

    async create(applicationId: string, route: NewRoute, trx: Knex = knex): Promise<RouteRecord> {
      const row = toRow(route, applicationId);
      await trx('routes').insert(row);
      return toRoute(row);
    },

    /** A route the application may use (seeded or its own). */
    async get(applicationId: string, id: string, trx: Knex = knex): Promise<RouteRecord | undefined> {
      const row = await visible(trx, applicationId).andWhere('id', id).first();
      return row && toRoute(row);
    },

    /** True when a route the application sees already has this name (names identify routes in the CLI). */
    async nameTaken(applicationId: string, name: string, trx: Knex = knex): Promise<boolean> {
      return Boolean(await visible(trx, applicationId).andWhere('name', name).first());
    },

    /** Any route, for the run scheduler. */
    async getAny(id: string, trx: Knex = knex): Promise<RouteRecord | undefined> {
      const row = await trx('routes').select(COLUMNS).where({ id }).first();
      return row && toRoute(row);
    },

    /** Seeded and own routes by name (then id). */
    async list(applicationId: string, w: OffsetWindow, trx: Knex = knex) {
      const page = await offsetPage<RouteRow>(() => visible(trx, applicationId),
        [{ column: 'name', order: 'asc' }, { column: 'id', order: 'asc' }], w);
      return { total: page.total, routes: page.rows.map(toRoute) };
    },
  };
}
export type RoutesRepository = ReturnType<typeof routesRepository>;
