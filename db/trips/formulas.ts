// Trips and report cards: every formula and constant in one place, with its unit.
// The segmentation SQL (segment.sql.ts) accumulates sums per trip; these functions turn the sums into the
// trip's statistics and the report card's grade. docs/concepts/trips-and-report-cards.md documents the same values.

/** Segmentation thresholds; configurable (lib/config.ts, DRIVEWIRE_TRIP_*). */
export interface SegmentOptions {
  /** ms: a reporting gap this long ends the trip (and, found by the sweep, a silent device's trip). */
  gapMs: number;
  /** ms: a trip without ignition frames ends once no motion was seen for this long. */
  stationaryMs: number;
  /** km/h: a sample at or above this speed is motion (starts a trip without ignition frames). */
  motionKmh: number;
  /** g: an accelerometer window this strong is an impact, not a hard brake or acceleration (lib/config.ts collisionImpactG). */
  impactG: number;
}

export const SEGMENT_DEFAULTS: SegmentOptions = {
  // 15 min: the shortest of the anchors' 15-60 min; long enough for a tunnel or a parking garage
  // without coverage, short enough that two drives of one day are not merged.
  gapMs: 15 * 60_000,
  // 180 s: the anchors use 180-300 s; longer than a red light or a level crossing, shorter than a stop to shop.
  stationaryMs: 180_000,
  // 5 km/h: walking pace; GPS speed noise of a parked device stays below it.
  motionKmh: 5,
  // 2.5 g: the collisions stage's default (DRIVEWIRE_COLLISION_IMPACT_G); braking or accelerating stays below 1 g.
  impactG: 2.5,
};

/** Driving-event detection (hard accelerations and brakes: hardAccelCount / hardBrakeCount). */
export const HARD = {
  /** m/s²: longitudinal acceleration at or above this is a hard acceleration. */
  accelMs2: 3.0,
  /** m/s²: deceleration at or above this (as a positive number) is a hard brake. */
  brakeMs2: 3.5,
  /** km/h: events count only while the speed (before or after the sample) is above this. */
  minSpeedKmh: 10,
} as const;

/** km/h: below this the vehicle is stopped (stopCount counts moving → stopped transitions). */
export const STOPPED_KMH = 2;

/** Fuel (fuelConsumed, fuelEconomy). */
export const FUEL = {
  /** Stoichiometric air/fuel mass ratio and density (g/L) per fuel type. */
  gasoline: { afr: 14.7, densityGL: 745 },
  diesel: { afr: 14.5, densityGL: 832 },
  /** L per US gallon, m per mile. */
  litersPerGallon: 3.785411784,
  metersPerMile: 1609.344,
} as const;

/** When a trip has enough data (substantial, comprehensiveLocations). */
export const QUALITY = {
  /** substantial: at least this many messages over at least this long (ms). */
  minMessages: 5,
  minDurationMs: 60_000,
  /** comprehensiveLocations: at least this share of the messages carried a location, and at least 2. */
  minLocationShare: 0.8,
} as const;

/**
 * Map preview (`preview`): the track simplified by Douglas-Peucker (ST_Simplify) with this tolerance
 * in degrees. A degree of latitude or longitude is at most 111.32 km, so every track point is within
 * 0.0002° × 111,320 m ≈ 22 m of the simplified line, plus ≤ 1.1 m from the polyline's 5-decimal rounding:
 * within 30 m as required.
 */
export const PREVIEW_TOLERANCE_DEG = 0.0002;

/** Running sums a trip keeps (segment.sql.ts); all SI-like units as named. */
export interface TripSums {
  startMs: number;
  /** stop (closed) or last message (open), epoch ms. */
  endMs: number;
  messageCount: number;
  locationCount: number;
  gpsM: number;
  vssM: number;
  speedN: number;
  maxSpeed: number | null;
  movingN: number;
  movingSum: number;
  movingSumSq: number;
  loadN: number;
  loadSum: number;
  /** L integrated from the engine fuel rate PID (L/h × h). */
  fuelRateL: number;
  /** g of air integrated from mass air flow (g/s × s), over samples without a fuel rate. */
  airG: number;
  /** Samples that carried a fuel rate or a mass air flow. */
  fuelN: number;
  /** The fuel type PID said diesel somewhere in the trip. */
  diesel: boolean;
  hardAccel: number;
  hardBrake: number;
  stopCount: number;
  /** Whether the last speed sample was a stop (the final halt is not counted as a stop). */
  lastStopped: boolean;
  /** ms spent above REPORT_CARD.speedingKmh. */
  speedingMs: number;
}

export interface TripStats {
  averageLoad: number | null;
  averageMovingSpeed: number | null;
  averageSpeed: number | null;
  comprehensiveLocations: boolean;
  distance: number;
  distanceByGPS: number;
  distanceByVSS: number | null;
  duration: number;
  fuelConsumed: number | null;
  fuelEconomy: number | null;
  hardAccelCount: number | null;
  hardBrakeCount: number | null;
  locationCount: number;
  maxSpeed: number | null;
  messageCount: number;
  stdDevMovingSpeed: number | null;
  stopCount: number;
  substantial: boolean;
}

const round = (v: number, d = 4) => Math.round(v * 10 ** d) / 10 ** d;

/** L of fuel burnt with `airG` g of air: air / AFR / density (gasoline unless diesel was detected). */
export function fuelFromAir(airG: number, diesel: boolean): number {
  const f = diesel ? FUEL.diesel : FUEL.gasoline;
  return airG / f.afr / f.densityGL;
}

/** L: the fuel-rate integral plus the fuel implied by the mass air flow; null when neither was reported. */
export function fuelConsumed(s: Pick<TripSums, 'fuelRateL' | 'airG' | 'fuelN' | 'diesel'>): number | null {
  return s.fuelN ? s.fuelRateL + fuelFromAir(s.airG, s.diesel) : null;
}

/** US mpg = miles / gallons (distance over fuel, never an average of instantaneous values); null without fuel. */
export function fuelEconomyMpg(distanceM: number, fuelL: number | null): number | null {
  if (!fuelL || fuelL <= 0) return null;
  return (distanceM / FUEL.metersPerMile) / (fuelL / FUEL.litersPerGallon);
}

/** Population standard deviation from n, Σx, Σx². */
export function stdDev(n: number, sum: number, sumSq: number): number | null {
  if (n <= 0) return null;
  const mean = sum / n;
  return Math.sqrt(Math.max(0, sumSq / n - mean * mean));
}

export function isComprehensive(s: Pick<TripSums, 'locationCount' | 'messageCount'>): boolean {
  return s.locationCount >= 2 && s.locationCount >= QUALITY.minLocationShare * s.messageCount;
}

export function isSubstantial(s: Pick<TripSums, 'messageCount' | 'startMs' | 'endMs'>): boolean {
  return s.messageCount >= QUALITY.minMessages && s.endMs - s.startMs >= QUALITY.minDurationMs;
}

/** A trip's statistics in their units (m, ms, km/h, %, L, mpg) from its sums. */
export function tripStats(s: TripSums): TripStats {
  const duration = Math.max(0, s.endMs - s.startMs);
  const comprehensive = isComprehensive(s);
  const vss = s.speedN >= 2 ? s.vssM : null;
  // GPS is better over long trips, the speed sensor over short ones: GPS when it covers the trip.
  const distance = comprehensive || vss === null ? s.gpsM : vss;
  const fuelL = fuelConsumed(s);
  const fuelEconomy = fuelEconomyMpg(distance, fuelL);
  const hasSpeed = s.speedN > 0;
  return {
    averageLoad: s.loadN ? round(s.loadSum / s.loadN) : null,
    averageMovingSpeed: s.movingN ? round(s.movingSum / s.movingN) : null,
    averageSpeed: duration > 0 ? round((distance / duration) * 3600) : null,
    comprehensiveLocations: comprehensive,
    distance: round(distance, 2),
    distanceByGPS: round(s.gpsM, 2),
    distanceByVSS: vss === null ? null : round(vss, 2),
    duration,
    fuelConsumed: fuelL === null ? null : round(fuelL, 5),
    fuelEconomy: fuelEconomy === null ? null : round(fuelEconomy),
    hardAccelCount: hasSpeed ? s.hardAccel : null,
    hardBrakeCount: hasSpeed ? s.hardBrake : null,
    locationCount: s.locationCount,
    maxSpeed: s.maxSpeed,
    messageCount: s.messageCount,
    stdDevMovingSpeed: (() => { const v = stdDev(s.movingN, s.movingSum, s.movingSumSq); return v === null ? null : round(v); })(),
    stopCount: Math.max(0, s.stopCount - (s.lastStopped ? 1 : 0)),
    substantial: isSubstantial(s),
  };
}

/**
 * Report card: penalty points per 10 km driven, from the trip's driving events:
 * points = 2 × hard brakes + 1 × hard accelerations + 1 × minute above speedingKmh, over the trip's distance but never
 * less than `exposureFloorKm`: one event is weak evidence on a short drive (as fleet scorecards that show a score only
 * after a minimum mileage), so a 2 km drive with one hard brake scores as 16 km would, a B, not 10 points per 10 km, an F.
 */
export const REPORT_CARD = {
  weights: { hardBrake: 2, hardAccel: 1, speedingMinute: 1 },
  /** km/h: time above this counts as speeding. */
  speedingKmh: 120,
  /** km: points are scaled to this distance. */
  perKm: 10,
  /** km: the least distance points are spread over (10 miles); a longer trip uses its own distance. */
  exposureFloorKm: 16,
  /** `I` (incomplete) below this distance (m) or when the trip is not substantial. */
  minDistanceM: 1000,
  /** Highest points per 10 km for each grade (inclusive); above the last one: F. */
  bands: [['A', 1], ['B', 2], ['C', 4], ['D', 8]] as [string, number][],
} as const;

/** Report-card grades: A-F by penalty points, I = incomplete (too short or too little data). */
export const GRADES = ['A', 'B', 'C', 'D', 'F', 'I'] as const;
export type Grade = typeof GRADES[number];

/**
 * Penalty points per REPORT_CARD.perKm km of the trip's distance, or of REPORT_CARD.exposureFloorKm when the trip is
 * shorter; null when the trip is too short or thin to grade.
 */
export function reportCardScore(s: Pick<TripStats, 'distance' | 'hardBrakeCount' | 'hardAccelCount' | 'substantial'>, speedingMs: number): number | null {
  if (!s.substantial || s.distance < REPORT_CARD.minDistanceM) return null;
  const w = REPORT_CARD.weights;
  const points = w.hardBrake * (s.hardBrakeCount ?? 0) + w.hardAccel * (s.hardAccelCount ?? 0) + w.speedingMinute * (speedingMs / 60_000);
  return points / (Math.max(s.distance / 1000, REPORT_CARD.exposureFloorKm) / REPORT_CARD.perKm);
}

export function gradeFor(score: number | null): Grade {
  if (score === null) return 'I';
  for (const [grade, max] of REPORT_CARD.bands) if (score <= max) return grade as Grade;
  return 'F';
}

/** The letter at the rounded mean band position of the graded trips (A = 0 … F = 4), from the count per grade; I when none is graded. */
export function overallGrade(counts: Partial<Record<Grade, number>>): Grade {
  const order: Grade[] = ['A', 'B', 'C', 'D', 'F'];
  const graded = order.reduce((n, g) => n + (counts[g] ?? 0), 0);
  if (!graded) return 'I';
  const mean = order.reduce((n, g, i) => n + i * (counts[g] ?? 0), 0) / graded;
  return order[Math.round(mean)];
}
