// The distance model in one place (docs/concepts/distance-and-odometers.md). Units: meters, seconds, km/h.

/** Units accepted on odometers, triggers and the `x-service-unit` header, as meters per unit. */
export const METERS_PER_UNIT = { m: 1, km: 1000, mi: 1609.344 } as const;
export type DistanceUnit = keyof typeof METERS_PER_UNIT;
export const DISTANCE_UNITS = Object.keys(METERS_PER_UNIT) as DistanceUnit[];

export const isUnit = (u: unknown): u is DistanceUnit => typeof u === 'string' && Object.hasOwn(METERS_PER_UNIT, u);
export const toMeters = (value: number, unit: DistanceUnit) => value * METERS_PER_UNIT[unit];
export const fromMeters = (meters: number, unit: DistanceUnit) => meters / METERS_PER_UNIT[unit];

/**
 * How a step (the meters between a device's message and its previous message) is measured:
 * - both messages have a location → great-circle distance on the WGS 84 spheroid (steps.sql.ts SPHEROID_M: ST_Distance on geography);
 *   0 when both report vehicleSpeed 0 (a parked car's GPS wanders a few meters), or when neither reports a speed
 *   above 0 and the points are closer than JITTER_M; a jump faster than MAX_GPS_KMH is a glitch and falls through to VSS;
 * - otherwise, both have vehicleSpeed and are at most VSS_MAX_GAP_S (60 s) apart → speed integrated (trapezoid);
 * - otherwise 0 (nothing known about the movement).
 */
export const STEP = {
  /** A car parked with the engine on drifts 2–5 m between fixes; below this, with no speed reported, no move. */
  JITTER_M: 10,
  /** Faster than any road vehicle: a fix this far from the previous one is a GPS glitch. */
  MAX_GPS_KMH: 300,
  /**
   * Devices report every 1-5 s while driving: a minute without a speed sample is a reporting gap, and the speeds at
   * its ends say little about it (60 km/h, then 0 km/h 219 s later: stopped a second or three minutes after?). Speed is
   * integrated only between samples at most this far apart, by the distance steps and by the trips' distanceByVSS
   * (db/trips/segment.sql.ts), which takes the GPS distance across a longer gap.
   */
  VSS_MAX_GAP_S: 60,
} as const;

/**
 * Confidence: the reading is taken as exact; each meter travelled since adds uncertainty. GPS distance on a
 * 1 Hz–0.2 Hz track cuts corners and misses turns (about 1% short on the recorded routes); vehicle speed sensors
 * read 2–4% off (tyre wear, calibration). The half-width of the interval is 1% of GPS meters + 3% of VSS meters,
 * plus 50 m for the rounding of a typed-in reading.
 */
export const CONFIDENCE = { GPS_FRACTION: 0.01, VSS_FRACTION: 0.03, READING_M: 50 } as const;

export function halfWidth(gpsM: number, vssM: number, anchored: boolean): number {
  return CONFIDENCE.GPS_FRACTION * gpsM + CONFIDENCE.VSS_FRACTION * vssM + (anchored ? CONFIDENCE.READING_M : 0);
}

/** At most this many milestone multiples fire in one batch; the rest fire in the next ones (a reading jump). */
export const MAX_MILESTONES_PER_BATCH = 100;
