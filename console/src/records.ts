/**
 * The public API's records as the console reads them: only the fields it uses, as /api/v1/openapi.json describes
 * them (docs/reference/rest-api.md). A field the console does not read is left out, not typed loosely.
 */
import type { TripStats } from '../../db/trips/formulas.js';

/** GeoJSON Point: [longitude, latitude] in degrees. */
export interface Point { type: 'Point'; coordinates: number[] }

export interface PageLinks { next?: string; prior?: string }
export interface Page { meta: { pagination: { links?: PageLinks } } }

export interface Device { id: string; name: string }
/** A device's presence: connected to the gateway now, and when it last was. */
export interface DeviceStatus { online: boolean; lastSeenAt: string | null; lastConnectedAt: string | null }
export interface DeviceDetail extends Device { status?: DeviceStatus }
/** A command to a device and, once answered, the device's reply. */
export interface Command {
  id: string;
  deviceId: string;
  type: string;
  payload: Record<string, unknown> | null;
  state: string;
  createdAt: string;
  sentAt: string | null;
  deliveredAt: string | null;
  respondedAt: string | null;
  expiresAt: string;
  response: { ok: boolean; result?: unknown; error?: string } | null;
}
export interface Message { id: string; timestamp: string; data: Record<string, unknown> & { location?: Point } }
export interface Locations { locations: { features: { geometry: Point; properties?: { timestamp?: string } }[] } }
export interface Vehicle { id: string; vin: string; year: string | null; make: string | null; model: string | null; trim: string | null }
export interface TroubleCode { number: string; description: string }
export interface BatteryStatus { status: string | null; timestamp: string | null }

/** bufferMeters (m): a device leaves only once beyond the fence by that much. */
export type Boundary =
  | { id: string; type: 'radius'; lon: number; lat: number; radius: number; bufferMeters?: number }
  | { id: string; type: 'polygon'; coordinates: number[][][]; bufferMeters?: number }
  /** Inside: at most widthMeters from the line of [lon, lat] positions. */
  | { id: string; type: 'corridor'; coordinates: number[][]; widthMeters: number; bufferMeters?: number }
  /** deadband (the parameter's unit): outside only that far below min or above max. */
  | { id: string; type: 'parametric'; parameter: string; min: number | null; max: number | null; deadband?: number };
/** When the rule reads messages: windows of days and HH:MM times in a time zone (`until` before `from` spans midnight). */
export interface ActiveHours { timeZone: string; windows: { days: string[]; from: string; until: string }[] }
export interface Rule {
  id: string;
  name: string;
  boundaries?: Boundary[];
  evaluated: boolean;
  covered: boolean;
  /** Dwell (s): an enter (a leave) only once covered (uncovered) that long. */
  minInsideSeconds?: number;
  minOutsideSeconds?: number;
  /** Enter and leave also from a straight segment between two fixes that passes through the boundary. */
  detectCrossings?: boolean;
  activeHours?: ActiveHours;
}

export interface DwEvent {
  id: string;
  eventType: string;
  timestamp: string;
  /** dwellSeconds: the dwell the event waited for; crossing: the event was interpolated between two fixes. */
  meta?: { rule?: { name?: string }; firstEval?: boolean; dwellSeconds?: number; crossing?: { interpolated: boolean } } | null;
}
export interface Subscription { id: string; eventType: string; url: string }
export interface Notification { eventType: string; eventTimestamp: string; state: string; attempts: number; responseCode?: number | null }

export interface Dummy { id: string; name: string; deviceId: string }
export interface Route { id: string; name: string; distanceByGPS: number; duration: number; preview: string }
export interface RunStatus {
  state: string;
  routeId: string;
  repeat: boolean;
  repeatCount: number;
  speed: number;
  lastSpeed: number | null;
  remainingSeconds: number | null;
  /** While waiting: when the next pass starts, and why. */
  nextPassAt: string | null;
  waitReason: string | null;
  framesSent: number;
  distance: number;
  outcome: 'completed' | 'stopped' | 'failed' | null;
  error: string | null;
  endedAt: string | null;
}
export interface Run { id: string; status: RunStatus }

/** A trip's statistics as the API presents them: the trips stage's own type (db/trips/formulas.ts). */
export type { TripStats };
/** The statistics that are figures (all but the two flags). */
export type NumericStat = Exclude<keyof TripStats, 'comprehensiveLocations' | 'substantial'>;
export interface Trip {
  id: string;
  start: string;
  stop: string | null;
  status: 'started' | 'completed';
  startPoint: Point | null;
  stopPoint: Point | null;
  preview: string | null;
  stats: TripStats;
  meta: { startReason: string; endReason: string | null };
  links: Record<string, string>;
}
export interface ReportCard { tripId: string; grade: string; score: number | null }
