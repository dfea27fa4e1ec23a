/** Boundary types of a rule. Distances in meters; coordinates are [longitude, latitude]. */
export type BoundaryInput =
  | { type: 'parametric'; parameter: string; min: number | null; max: number | null; deadband?: number }
  | { type: 'radius'; lon: number; lat: number; radius: number; bufferMeters?: number }
  | { type: 'polygon'; coordinates: number[][][]; bufferMeters?: number }
  | { type: 'corridor'; coordinates: number[][]; widthMeters: number; bufferMeters?: number };

export type Boundary = BoundaryInput & { id: string };

/** Days of a schedule window, Monday first (ISO 8601 day numbers 1..7). */
export const WEEKDAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;
export type Weekday = typeof WEEKDAYS[number];

/** When a rule reads messages: windows of local time in a named time zone. */
export interface ActiveHours { timeZone: string; windows: { days: Weekday[]; from: string; until: string }[] }

/** The options a rule may add to its boundaries (docs/concepts/rules-events-webhooks.md, "Rule options"). */
export interface RuleOptions {
  minInsideSeconds?: number;
  minOutsideSeconds?: number;
  detectCrossings?: boolean;
  activeHours?: ActiveHours;
}

export interface NewRule extends RuleOptions { name: string; boundaries: BoundaryInput[] }

/** A rule as stored, with its current evaluation state. */
export interface RuleRecord extends RuleOptions {
  id: string;
  applicationId: string;
  deviceId: string;
  name: string;
  createdAt: Date;
  evaluated: boolean;
  covered: boolean;
  /** Absent in list output (the list has no boundaries). */
  boundaries?: Boundary[];
}

export type RuleWithBoundaries = RuleRecord & { boundaries: Boundary[] };

export const GEOGRAPHIC_TYPES = ['radius', 'polygon', 'corridor'] as const;
export const BOUNDARY_TYPES = ['parametric', ...GEOGRAPHIC_TYPES] as const;

/** The options of a rule that are set, as a rule copy presents them (and `rules.options` holds). */
export function presentOptions(o: RuleOptions): RuleOptions {
  return {
    ...(o.minInsideSeconds ? { minInsideSeconds: o.minInsideSeconds } : {}),
    ...(o.minOutsideSeconds ? { minOutsideSeconds: o.minOutsideSeconds } : {}),
    ...(o.detectCrossings ? { detectCrossings: true } : {}),
    ...(o.activeHours ? { activeHours: o.activeHours } : {}),
  };
}

const minutes = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));
const DAY = 1440;
const WEEK = 7 * DAY;

/**
 * The minutes of the week (Monday 00:00 = 0, local time) a schedule covers, as a PostgreSQL int4multirange literal:
 * each window from its start on each of its days to its end, the next day when `until` is earlier than `from` (the
 * whole day when they are equal), Sunday's overnight end wrapping to Monday morning.
 */
export function activeWeek(hours: ActiveHours): string {
  const ranges: [number, number][] = [];
  for (const w of hours.windows) {
    const [from, until] = [minutes(w.from), minutes(w.until)];
    const length = until > from ? until - from : until + DAY - from;
    for (const day of w.days) {
      const start = WEEKDAYS.indexOf(day) * DAY + from;
      const end = start + length;
      if (end <= WEEK) ranges.push([start, end]);
      else ranges.push([start, WEEK], [0, end - WEEK]);
    }
  }
  return `{${ranges.map(([a, b]) => `[${a},${b})`).join(',')}}`;
}
