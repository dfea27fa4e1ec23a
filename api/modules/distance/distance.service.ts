import { ValidationError } from '../../../lib/errors.js';
import { parseTimeParam } from '../../../lib/time.js';
import type { LinkBuilder } from '../../../lib/links.js';
import { DISTANCE_UNITS, fromMeters, isUnit, toMeters, type DistanceUnit } from '../../../db/distance/model.js';
import type { Estimate } from '../../../db/distance/estimate.sql.js';
import { TRIGGER_TYPES, type Odometer, type OdometerTrigger, type TriggerType } from '../../../db/distance/odometers.repository.js';

type Headers = Record<string, string | string[] | undefined>;

function unitOf(field: string, raw: string): DistanceUnit {
  if (!isUnit(raw)) throw new ValidationError(`${field} must be one of ${DISTANCE_UNITS.join(', ')}; got "${String(raw).slice(0, 40)}"`);
  return raw;
}

/** The unit of distance answers: `x-service-unit`, or its alias `x-vinli-unit` (the official SDK's); default m. */
export function unitFromHeaders(headers: Headers): DistanceUnit {
  const name = headers['x-service-unit'] !== undefined ? 'x-service-unit' : 'x-vinli-unit';
  const raw = headers[name];
  const value = (Array.isArray(raw) ? raw[0] : raw)?.trim();
  if (value === undefined || value === '') return 'm';
  return unitOf(name, value);
}

/**
 * An odometer reading from a request: its unit checked, in meters, its date if it has one; `allowDecrease`: whether it
 * may make the odometer go backwards (checkMonotonic). Read before the vehicle is looked up (a bad body is a 400
 * first); datedReading then places it on the vehicle's clock.
 */
export function parseReading(input: { reading: number; unit: string; date?: string; allowDecrease?: boolean }) {
  const unit = unitOf('odometer.unit', input.unit);
  if (!Number.isFinite(input.reading) || input.reading < 0) throw new ValidationError('odometer.reading must be a number ≥ 0');
  const date = parseTimeParam('odometer.date', input.date);
  return { readingM: toMeters(input.reading, unit), date, unit, allowDecrease: input.allowDecrease === true };
}

/**
 * The reading dated by default at `now`, the vehicle's clock (db/vehicle-clock.ts: a dummy's runs stamp ahead of the
 * wall clock), and no later than it (a minute of skew allowed).
 */
export function datedReading(reading: ReturnType<typeof parseReading>, now: Date) {
  const date = reading.date ?? now;
  if (date.getTime() > now.getTime() + 60_000) throw new ValidationError('odometer.date must not be in the future');
  return { ...reading, date };
}

/**
 * Refuses (400) a reading that makes the odometer go backwards over time: `conflict`, a stored reading of the
 * application dated before it with a larger value, or after it with a smaller one (odometers repository
 * `conflictingReading`). Values in the reading's unit.
 */
export function checkMonotonic(reading: { readingM: number; date: Date; unit: DistanceUnit }, conflict: Odometer | undefined): void {
  if (!conflict) return;
  const show = (m: number) => `${round(fromMeters(m, reading.unit), reading.unit)} ${reading.unit}`;
  const earlier = conflict.date.getTime() < reading.date.getTime();
  throw new ValidationError(`odometer.reading ${show(reading.readingM)} on ${reading.date.toISOString()} is ${earlier ? 'less' : 'more'} than `
    + `the reading of ${show(conflict.readingM)} on ${conflict.date.toISOString()} (${conflict.id}): an odometer does not go backwards; `
    + 'set odometer.allowDecrease to true to record it anyway (a replaced instrument cluster)');
}

export function parseTrigger(input: { type: string; threshold: number; unit: string }) {
  if (!TRIGGER_TYPES.includes(input.type as TriggerType)) {
    throw new ValidationError(`odometerTrigger.type must be one of ${TRIGGER_TYPES.join(', ')}; got "${String(input.type).slice(0, 40)}"`);
  }
  const unit = unitOf('odometerTrigger.unit', input.unit);
  if (!Number.isFinite(input.threshold) || input.threshold <= 0) throw new ValidationError('odometerTrigger.threshold must be a number > 0');
  const thresholdM = toMeters(input.threshold, unit);
  // A 1 m milestone would be an event per message; 100 m is below any use and bounds the event rate.
  if (input.type === 'milestone' && thresholdM < 100) throw new ValidationError('odometerTrigger.threshold of a milestone must be at least 100 m');
  return { type: input.type as TriggerType, thresholdM };
}

const round = (v: number, unit: DistanceUnit) => { const f = unit === 'm' ? 100 : 100_000; return Math.round(v * f) / f; };
const vehicleLink = (links: LinkBuilder, id: string) => links.url('platform', `/api/v1/vehicles/${id}`);

export function presentDistance(links: LinkBuilder, vehicleId: string, e: Estimate, unit: DistanceUnit, self: string) {
  const out = (m: number) => round(fromMeters(m, unit), unit);
  return {
    vehicleId, value: out(e.valueM), unit, confidenceMin: out(e.confidenceMinM), confidenceMax: out(e.confidenceMaxM),
    lastOdometerDate: e.lastOdometerDate?.toISOString() ?? null, basis: e.lastOdometerDate ? 'odometer' : 'observed',
    links: { self, vehicle: vehicleLink(links, vehicleId) },
  };
}

export function presentOdometer(links: LinkBuilder, o: Odometer) {
  return {
    id: o.id, vehicleId: o.vehicleId, reading: round(o.readingM, 'm'), unit: 'm' as const, date: o.date.toISOString(),
    links: { self: links.url('distance', `/api/v1/odometers/${o.id}`), vehicle: vehicleLink(links, o.vehicleId) },
  };
}

export function presentTrigger(links: LinkBuilder, t: OdometerTrigger) {
  return {
    id: t.id, vehicleId: t.vehicleId, type: t.type, threshold: round(t.thresholdM, 'm'), unit: 'm' as const, events: t.events,
    createdAt: t.createdAt.toISOString(),
    links: { self: links.url('distance', `/api/v1/odometer_triggers/${t.id}`), vehicle: vehicleLink(links, t.vehicleId) },
  };
}
