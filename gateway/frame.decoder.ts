// Device frame format (uplink topic devices/<id>/frames): one frame object or a JSON array of
// frames. Decoding is pure: a bad frame becomes a RefusedFrame with a short human reason, and
// never affects the other frames of its payload.
import { COLLISION_FIELD, FRAME_FIELDS, validateValue } from '../lib/catalog.js';
import { MAX_JSON_DEPTH, nestsDeeperThan, preview } from '../lib/json-bounds.js';
import { parseInstant } from '../lib/time.js';
import { configDefault } from '../lib/config.js';
import { decodeDtcs, decodePids, decodeVin } from './obd.decoder.js';

export const FRAME_KINDS = ['telemetry', 'startup', 'shutdown', 'phone-home'] as const;
export type FrameKind = (typeof FRAME_KINDS)[number];

export interface DecodedFrame {
  frameId: string | null;
  ts: Date;
  kind: FrameKind;
  /** Catalog keys, plus `location` (GeoJSON Point [lon, lat]) and `accel`; only what this frame carried. */
  data: Record<string, unknown>;
  lat: number | null;
  lon: number | null;
  gps: { alt?: number; speed?: number; heading?: number; hdop?: number; satellites?: number } | null;
  vin: string | null;
  dtcs: string[] | null;
  battery: { voltage: number; crankingVoltage?: number; soc?: number } | null;
  collision: Record<string, number> | null;
  /** Fields the platform does not know (`speed`, `location.fix`), ignored; present only when there are some. */
  ignoredFields?: string[];
}
/** `raw`: the frame as parsed, for its dead letter; null when the payload's bytes stand for it. */
export interface RefusedFrame { index: number; frameId: string | null; reason: string; raw: unknown }
export type PayloadResult = { frames: DecodedFrame[]; refused: RefusedFrame[]; payloadError: string | null };

export const DEFAULT_MAX_PAYLOAD_BYTES = 262144;
const MIN_TS = Date.UTC(2000, 0, 1);
/** ms a frame's ts may be ahead of the gateway's clock when the caller gives none: the setting's default. */
const DEFAULT_MAX_FUTURE_SKEW_MS = configDefault('maxFutureSkewMs');
const MAX_ID_LENGTH = 128;
const FIELDS = new Set(['id', 'ts', 'kind', 'location', 'accel', 'pids', 'data', 'vin', 'dtcs', 'battery', 'collision']);
const GPS_FIELDS = ['alt', 'speed', 'heading', 'hdop', 'satellites'] as const;
const ACCEL_FIELDS = ['maxX', 'maxY', 'maxZ', 'minX', 'minY', 'minZ'] as const;

type Obj = Record<string, unknown>;
/**
 * Why a frame is refused, thrown from deep in its decoding and caught in decodeFrame. Not an Error: an Error records
 * its stack when made, and a payload of many bad frames would spend most of its decoding on stacks nobody reads.
 */
class Refusal { constructor(readonly message: string) {} }
const refuse = (reason: string): never => { throw new Refusal(reason); };

const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const typeName = (v: unknown) =>
  v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v === 'object' ? 'an object' : `a ${typeof v}`;
const show = (v: unknown) => preview(v, 40);

/**
 * An object at `path`; keys not in `allowed` are noted in `ignored` (firmware adds fields before the
 * platform knows them: they are dropped, not a reason to refuse the frame).
 */
function object(v: unknown, path: string, allowed?: readonly string[], ignored?: string[]): Obj {
  if (!isObject(v)) return refuse(`${path} must be an object, got ${typeName(v)}`);
  if (allowed && ignored) for (const k of Object.keys(v)) if (!allowed.includes(k)) ignored.push(`${path}.${k}`);
  return v;
}

interface NumRule { min?: number; max?: number; integer?: boolean }
function num(o: Obj, field: string, path: string, rule: NumRule & { required: true }): number;
function num(o: Obj, field: string, path: string, rule?: NumRule): number | undefined;
function num(o: Obj, field: string, path: string, rule: NumRule & { required?: boolean } = {}): number | undefined {
  const v = o[field];
  if (v === undefined || v === null) return rule.required ? refuse(`${path} is missing`) : undefined;
  if (typeof v !== 'number' || !Number.isFinite(v)) return refuse(`${path} must be a number, got ${show(v)}`);
  const { min = -Infinity, max = Infinity } = rule;
  if (v < min) refuse(max === Infinity ? `${path} ${v} must be at least ${min}` : `${path} ${v} is out of range ${min}..${max}`);
  if (v > max) refuse(`${path} ${v} is out of range ${min}..${max}`);
  if (rule.integer && !Number.isInteger(v)) refuse(`${path} ${v} must be an integer`);
  return v;
}

function frameIdOf(v: unknown): string | null {
  if (typeof v === 'string' && v.length > 0 && v.length <= MAX_ID_LENGTH) return v;
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) return String(v);
  return null;
}

/** What parseInstant says of a frame's ts, in the decoder's words. */
function instantOf(v: string | number): number {
  const r = parseInstant(v);
  if ('ms' in r) return r.ms;
  if (r.problem === 'syntax') return refuse(`ts ${show(v)} is not an ISO 8601 date-time with a time zone, nor epoch milliseconds`);
  return refuse(`ts ${show(v)} ${r.reason}`);
}

/**
 * The frame's capture time (lib/time.ts parseInstant), from 2000-01-01 to `maxFutureSkewMs` past the gateway's clock:
 * a frame stamped ahead is stored as the device's newest, so its real frames that follow count as late ones.
 */
function parseTs(v: unknown, now: Date, maxFutureSkewMs: number): Date {
  if (v === undefined || v === null) return refuse('ts is missing');
  if (typeof v !== 'number' && typeof v !== 'string') return refuse(`ts must be an ISO 8601 string or epoch milliseconds, got ${typeName(v)}`);
  const ms = instantOf(v);
  const ts = new Date(ms);
  if (ms < MIN_TS) {
    const epoch = typeof v === 'number' || /^\d+$/.test(v);
    const hint = epoch && ms >= MIN_TS / 1000 && ms < 1e10 ? ' (epoch seconds? ts must be milliseconds)' : '';
    refuse(`ts ${ts.toISOString()} is before 2000-01-01${hint}`);
  }
  if (ms > now.getTime() + maxFutureSkewMs) {
    refuse(`ts ${ts.toISOString()} is more than ${maxFutureSkewMs / 1000} s ahead of the gateway's clock (${now.toISOString()})`);
  }
  return ts;
}

function parseKind(v: unknown): FrameKind {
  if (v === undefined || v === null) return 'telemetry';
  if (FRAME_KINDS.includes(v as FrameKind)) return v as FrameKind;
  return refuse(`kind ${show(v)} is not one of ${FRAME_KINDS.join(', ')}`);
}

/** A required number at `path`, in its catalog range (lib/catalog.ts FRAME_FIELDS). */
const REQUIRED = (path: string) => ({ ...FRAME_FIELDS[path], required: true } as const);
const GPS_PATHS = GPS_FIELDS.map((f) => `location.${f}`);
const [LAT, LON, VOLTAGE] = ['location.lat', 'location.lon', 'battery.voltage'].map(REQUIRED);

function parseLocation(v: unknown, ignored: string[]) {
  const o = object(v, 'location', ['lat', 'lon', ...GPS_FIELDS], ignored);
  const lat = num(o, 'lat', 'location.lat', LAT);
  const lon = num(o, 'lon', 'location.lon', LON);
  const gps: NonNullable<DecodedFrame['gps']> = {};
  for (let i = 0; i < GPS_FIELDS.length; i++) {
    const n = num(o, GPS_FIELDS[i], GPS_PATHS[i], FRAME_FIELDS[GPS_PATHS[i]]);
    if (n !== undefined) gps[GPS_FIELDS[i]] = n;
  }
  return { lat, lon, gps: Object.keys(gps).length ? gps : null };
}

const ACCEL_PATHS = ACCEL_FIELDS.map((f) => `accel.${f}`);
const ACCEL_RULES = ACCEL_PATHS.map(REQUIRED);

function parseAccel(v: unknown, ignored: string[]): Record<string, number> {
  const o = object(v, 'accel', ACCEL_FIELDS, ignored);
  const accel: Record<string, number> = {};
  for (let i = 0; i < ACCEL_FIELDS.length; i++) accel[ACCEL_FIELDS[i]] = num(o, ACCEL_FIELDS[i], ACCEL_PATHS[i], ACCEL_RULES[i]);
  return accel;
}

function parsePids(v: unknown): Obj {
  const { data, errors } = decodePids(object(v, 'pids'));
  return errors.length ? refuse(`pids: ${errors.join('; ')}`) : data;
}

function parseData(v: unknown): Obj {
  const o = object(v, 'data');
  for (const [key, value] of Object.entries(o)) {
    if (key === 'location' || key === 'accel') refuse(`data.${key} is not allowed; send ${key} at the top level of the frame`);
    const problem = validateValue(key, value);
    if (problem) refuse(`data.${problem}`);
  }
  return o;
}

function parseVin(v: unknown): string {
  if (typeof v !== 'string') return refuse(`vin must be a string, got ${typeName(v)}`);
  const r = decodeVin(v);
  return 'vin' in r ? r.vin : refuse(`vin: ${r.error}`);
}

function parseDtcs(v: unknown): string[] {
  if (typeof v !== 'string' && !Array.isArray(v)) return refuse(`dtcs must be an array of codes or a hex string, got ${typeName(v)}`);
  const { codes, errors } = decodeDtcs(v);
  return errors.length ? refuse(errors.join('; ')) : codes;
}

function parseBattery(v: unknown, ignored: string[]): NonNullable<DecodedFrame['battery']> {
  const o = object(v, 'battery', ['voltage', 'crankingVoltage', 'soc'], ignored);
  const battery: NonNullable<DecodedFrame['battery']> = {
    voltage: num(o, 'voltage', 'battery.voltage', VOLTAGE),
  };
  const cranking = num(o, 'crankingVoltage', 'battery.crankingVoltage', FRAME_FIELDS['battery.crankingVoltage']);
  const soc = num(o, 'soc', 'battery.soc', FRAME_FIELDS['battery.soc']);
  if (cranking !== undefined) battery.crankingVoltage = cranking;
  if (soc !== undefined) battery.soc = soc;
  return battery;
}

function parseCollision(v: unknown): Record<string, number> {
  const o = object(v, 'collision');
  for (const key of Object.keys(o)) {
    if (!/^[A-Za-z][A-Za-z0-9_]{0,63}$/.test(key)) refuse(`collision field name ${show(key)} is not an identifier`);
    const path = `collision.${key}`;
    num(o, key, path, FRAME_FIELDS[path] ?? COLLISION_FIELD);
  }
  return { ...o } as Record<string, number>;
}

const present = (v: unknown) => v !== undefined && v !== null;

function decodeFields(raw: Obj, now: Date, maxFutureSkewMs: number): DecodedFrame {
  const ignored: string[] = [];
  for (const k in raw) if (!FIELDS.has(k)) ignored.push(k);
  if (present(raw.id) && frameIdOf(raw.id) === null) {
    refuse(`id must be a string of 1 to ${MAX_ID_LENGTH} characters or a non-negative integer`);
  }
  const ts = parseTs(raw.ts, now, maxFutureSkewMs);
  const kind = parseKind(raw.kind);
  const loc = present(raw.location) ? parseLocation(raw.location, ignored) : null;
  const accel = present(raw.accel) ? parseAccel(raw.accel, ignored) : null;
  // data after pids, so a key given by both takes the value from data (parsePids builds a new object)
  const data: Obj = present(raw.pids) ? parsePids(raw.pids) : {};
  if (present(raw.data)) Object.assign(data, parseData(raw.data));
  if (loc) data.location = { type: 'Point', coordinates: [loc.lon, loc.lat] };
  if (accel) data.accel = accel;
  const frame: DecodedFrame = {
    frameId: frameIdOf(raw.id), ts, kind, data,
    lat: loc?.lat ?? null, lon: loc?.lon ?? null, gps: loc?.gps ?? null,
    vin: present(raw.vin) ? parseVin(raw.vin) : null,
    dtcs: present(raw.dtcs) ? parseDtcs(raw.dtcs) : null,
    battery: present(raw.battery) ? parseBattery(raw.battery, ignored) : null,
    collision: present(raw.collision) ? parseCollision(raw.collision) : null,
  };
  if (ignored.length) frame.ignoredFields = ignored;
  return frame;
}

/**
 * A decoded frame as JSON, in the frame format's field names (ts as ISO 8601; location and accel inside data, as
 * stored): what a dead letter keeps of a frame refused after decoding, whose raw form is no longer at hand.
 */
export function decodedFrameJson(f: DecodedFrame): Buffer {
  const out: Record<string, unknown> = { id: f.frameId ?? undefined, ts: f.ts.toISOString(), kind: f.kind, data: f.data };
  for (const key of ['vin', 'dtcs', 'battery', 'collision', 'gps'] as const) if (f[key] !== null) out[key] = f[key];
  return Buffer.from(JSON.stringify(out));
}

export function isRefused(r: DecodedFrame | RefusedFrame): r is RefusedFrame {
  return 'reason' in r;
}

/**
 * Decodes one frame; `index` is its position in the payload, used in the refusal reason. A frame nested
 * deeper than MAX_JSON_DEPTH is refused before anything walks it; its `raw` is then null (the payload's
 * bytes are kept instead: re-serialising it could overflow the stack).
 */
export function decodeFrame(raw: unknown, index: number, now: Date, maxFutureSkewMs = DEFAULT_MAX_FUTURE_SKEW_MS): DecodedFrame | RefusedFrame {
  if (nestsDeeperThan(raw, MAX_JSON_DEPTH)) {
    return { index, frameId: null, reason: `frame ${index}: nests arrays or objects more than ${MAX_JSON_DEPTH} levels deep`, raw: null };
  }
  const frameId = isObject(raw) ? frameIdOf(raw.id) : null;
  try {
    if (!isObject(raw)) refuse(`must be an object, got ${typeName(raw)}`);
    return decodeFields(raw as Obj, now, maxFutureSkewMs);
  } catch (err) {
    if (!(err instanceof Refusal)) throw err;
    return { index, frameId, reason: `frame ${index}: ${err.message}`, raw };
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

export function decodePayload(payload: Buffer, opts: { now?: Date; maxBytes?: number; maxFutureSkewMs?: number } = {}): PayloadResult {
  const now = opts.now ?? new Date();
  const maxBytes = opts.maxBytes ?? DEFAULT_MAX_PAYLOAD_BYTES;
  const failed = (payloadError: string): PayloadResult => ({ frames: [], refused: [], payloadError });
  if (payload.length > maxBytes) return failed(`payload of ${payload.length} bytes exceeds the ${maxBytes}-byte limit`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(utf8.decode(payload));
  } catch (err) {
    return failed(err instanceof SyntaxError ? `payload is not JSON: ${err.message}` : 'payload is not valid UTF-8');
  }
  if (Array.isArray(parsed) && parsed.length === 0) return failed('payload is an empty array');
  if (!Array.isArray(parsed) && !isObject(parsed)) {
    return failed(`payload must be a frame object or an array of frames, got ${typeName(parsed)}`);
  }
  const result: PayloadResult = { frames: [], refused: [], payloadError: null };
  (Array.isArray(parsed) ? parsed : [parsed]).forEach((raw, i) => {
    const r = decodeFrame(raw, i, now, opts.maxFutureSkewMs);
    if (isRefused(r)) result.refused.push(r);
    else result.frames.push(r);
  });
  return result;
}
