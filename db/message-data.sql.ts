/**
 * How a stored message's telemetry is laid out, and how it reads back in SQL (docs/operations/postgresql.md,
 * "What a message costs").
 *
 * A message's numbers are one `float8[]`, `num`, each value at its key's fixed slot (MESSAGE_SLOTS: the accelerometer
 * axes, the GPS fix's extras, then every numeric catalog parameter); a parameter the message did not carry is a null
 * slot, which costs one bit, and trailing nulls are not stored. Its other parameters (strings, lists) are a jsonb
 * object, `txt`, null when there are none; its location is the `location` point alone. As jsonb, each value carried its
 * key's name, a 4-byte entry for key and value and a numeric's header: a typical frame's data took 500 bytes, its
 * numbers take 150 here, with the same values (a JSON number is a float8 in the gateway already).
 *
 * Slots are a storage format: a key keeps its slot forever, a new parameter takes the next one (appended to
 * MESSAGE_SLOTS, with a migration that replaces message_data()). test/db/message-data.test.ts checks every numeric
 * parameter of lib/catalog.ts has one.
 */
import { CATALOG, PARAMETERS } from '../lib/catalog.js';

/** The accelerometer axes: `data.accel.<axis>`. */
export const ACCEL_AXES = ['maxX', 'maxY', 'maxZ', 'minX', 'minY', 'minZ'] as const;
/** The GPS fix's extras beyond the point (the frame's `location.<field>`), kept out of `data` as before. */
const GPS_EXTRAS = ['alt', 'speed', 'heading', 'hdop', 'satellites'] as const;

/**
 * Every slot's key, 1-based in SQL: `accel.*`, then `gps.*`, then the numeric catalog parameters in catalog order at
 * the time slots were made. Append only.
 */
export const MESSAGE_SLOTS: readonly string[] = Object.freeze([
  ...ACCEL_AXES.map((a) => `accel.${a}`),
  ...GPS_EXTRAS.map((g) => `gps.${g}`),
  'calculatedLoadValue', 'coolantTemp', 'shortTermFuelTrimBank1', 'longTermFuelTrimBank1', 'shortTermFuelTrimBank2',
  'longTermFuelTrimBank2', 'fuelPressure', 'intakeManifoldPressure', 'rpm', 'vehicleSpeed', 'timingAdvance',
  'intakeAirTemperature', 'massAirFlow', 'absoluteThrottleSensorPosition', 'oxygenSensorVoltage1a', 'shortTermFuelTrim1a',
  'oxygenSensorVoltage1b', 'shortTermFuelTrim1b', 'oxygenSensorVoltage1c', 'shortTermFuelTrim1c', 'oxygenSensorVoltage1d',
  'shortTermFuelTrim1d', 'oxygenSensorVoltage2a', 'shortTermFuelTrim2a', 'oxygenSensorVoltage2b', 'shortTermFuelTrim2b',
  'oxygenSensorVoltage2c', 'shortTermFuelTrim2c', 'oxygenSensorVoltage2d', 'shortTermFuelTrim2d', 'runTimeSinceEngineStart',
  'distanceTraveledMILActivated', 'fuelRailPressureRelManifold', 'fuelRailPressure', 'equivalenceRatio1a', 'voltage1a',
  'equivalenceRatio1b', 'voltage1b', 'equivalenceRatio1c', 'voltage1c', 'equivalenceRatio1d', 'voltage1d',
  'equivalenceRatio2a', 'voltage2a', 'equivalenceRatio2b', 'voltage2b', 'equivalenceRatio2c', 'voltage2c',
  'equivalenceRatio2d', 'voltage2d', 'commandedExhaustGasRecirculation', 'exhaustGasRecirculationError',
  'commandedEvaporativePurge', 'fuelLevelInput', 'numberOfWarmupsSinceDTCsCleared', 'distanceSinceDTCsCleared',
  'evapSystemVaporPressure1', 'barometricPressure', 'equivalenceRatio1aa', 'current1a', 'equivalenceRatio1bb', 'current1b',
  'equivalenceRatio1cc', 'current1c', 'equivalenceRatio1dd', 'current1d', 'equivalenceRatio2aa', 'current2a',
  'equivalenceRatio2bb', 'current2b', 'equivalenceRatio2cc', 'current2c', 'equivalenceRatio2dd', 'current2d',
  'catalystTemp1a', 'catalystTemp2a', 'catalystTemp1b', 'catalystTemp2b', 'controlModuleVoltage', 'absoluteLoadValue',
  'fuelAirCommandedEquivalenceRatio', 'relativeThrottlePosition', 'ambientAirTemperature', 'absoluteThrottlePositionb',
  'absoluteThrottlePositionc', 'acceleratorPedalPositiond', 'acceleratorPedalPositione', 'acceleratorPedalPositionf',
  'commandedThrottleActuatorControl', 'engineRuntimeWhileMILOn', 'engineRuntimeSinceDTCsCleared',
  'externalEquipmentEquivalenceRatio1', 'externalO2Voltage1', 'externalO2Current1', 'externalAbsIntakeManifoldPressure1',
  'ethanolFuelPercentage', 'absEvapSystemVaporPressure', 'evapSystemVaporPressure2', '2ndShortTermFuelTrim1',
  '2ndShortTermFuelTrim3', '2ndLongTermFuelTrim1', '2ndLongTermFuelTrim3', '2ndShortTermFuelTrim2', '2ndShortTermFuelTrim4',
  '2ndLongTermFuelTrim2', '2ndLongTermFuelTrim4', 'absFuelRailPressure', 'relativeAcceleratorPosition', 'hybridBatteryLife',
  'engineOilTemperature', 'fuelInjectionTiming', 'engineFuelRate', 'driversDemandEnginePercentTorque',
  'actualEnginePercentTorque', 'engineReferenceTorque', 'enginePercentTorqueData', 'auxIO', 'mafSensor', 'engineCoolantTemp',
  'intakeAirTempSensor', 'commandedEGRAndError', 'intakeAirFlow', 'egrTemp', 'throttleActuatorControlPosition',
  'fuelPressureControlSystem', 'injectionPressureControlSystem', 'turbochargerCompressorInletPressure',
  'boostPressureControl', 'vgtControl', 'wastegateControl', 'exhaustPressure', 'turbochargerRPM', 'tcTempA', 'tcTempC',
  'cact', 'dpf1', 'dpf2', 'dpfTemp', 'noxNTEControlAreaStatus', 'pmNTEControlAreaStatus', 'engineRuntime', 'engineRuntime1',
  'engineRuntime2', 'noxSensor', 'manifoldTemp', 'noxControlSystem', 'pmSensor', 'intakeManifoldAbsPressure',
  'reservediISOSAE',
]);

const SLOT = new Map(MESSAGE_SLOTS.map((key, i) => [key, i + 1]));
const FIRST_PARAMETER = ACCEL_AXES.length + GPS_EXTRAS.length + 1;
/** The catalog parameters that have a slot (their numbers are stored there; a string value of a `scalar` goes to txt). */
const PARAMETER_KEYS = MESSAGE_SLOTS.slice(FIRST_PARAMETER - 1);

/** A key's 1-based slot, or undefined when it has none (strings, lists, unknown keys). */
export const slotOf = (key: string): number | undefined => SLOT.get(key);

/** The SQL expression of a slot's value (float8, null when the message did not carry it). */
export function numAt(alias: string, key: string): string {
  const slot = SLOT.get(key);
  if (!slot) throw new Error(`no message slot for ${key}`);
  return `${alias}.num[${slot}]`;
}

const textArray = (keys: readonly string[]) => `ARRAY[${keys.map((k) => `'${k}'`).join(', ')}]::text[]`;

/**
 * The migration-made SQL functions that read a message back (db/migrations/035_messages_compact.ts):
 * - message_accel(num): the accel object of slots 1–6, null without any;
 * - message_data(num, txt, location): `data` as the API shows it (txt's keys, the slots' parameters, accel,
 *   location as a GeoJSON Point);
 * - message_id_ts(id): the timestamp a message id carries (lib/uuid7.ts), and message_uuid(ts) a new id for a
 *   message of that timestamp (random otherwise, as lib/uuid7.ts uuid7);
 * - message_num(data, gps) and message_txt(data): a `data` jsonb (and GPS extras) as num and txt, as storedData
 *   splits it, for rows written in SQL (the migration's copy, fixtures, benchmarks' generators).
 * All but message_uuid are IMMUTABLE: they read their arguments only.
 */
export function messageDataFunctions(): string[] {
  return [
    `CREATE OR REPLACE FUNCTION message_uuid(ts timestamptz) RETURNS uuid LANGUAGE sql VOLATILE PARALLEL SAFE AS $$
      SELECT overlay(overlay(replace(gen_random_uuid()::text, '-', '')
        PLACING lpad(to_hex(floor(extract(epoch FROM ts) * 1000)::bigint), 12, '0') FROM 1 FOR 12) PLACING '7' FROM 13 FOR 1)::uuid $$`,
    `CREATE OR REPLACE FUNCTION message_id_ts(id uuid) RETURNS timestamptz LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
      SELECT 'epoch'::timestamptz + ('x' || translate(left(id::text, 13), '-', ''))::bit(48)::bigint * interval '1 millisecond' $$`,
    `CREATE OR REPLACE FUNCTION message_num(data jsonb, gps jsonb) RETURNS float8[] LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
      DECLARE
        slots constant text[] := ${textArray(MESSAGE_SLOTS)};
        r float8[] := ARRAY[NULL::float8];
        e record;
        slot int;
        any_value boolean := false;
      BEGIN
        FOR e IN SELECT key, value FROM jsonb_each(coalesce(data, '{}'::jsonb)) WHERE key <> 'accel'
          UNION ALL SELECT 'accel.' || key, value FROM jsonb_each(CASE WHEN jsonb_typeof(data -> 'accel') = 'object' THEN data -> 'accel' END)
          UNION ALL SELECT 'gps.' || key, value FROM jsonb_each(CASE WHEN jsonb_typeof(gps) = 'object' THEN gps END) LOOP
          slot := array_position(slots, e.key);
          IF slot IS NOT NULL AND jsonb_typeof(e.value) = 'number'
            AND (slot >= ${FIRST_PARAMETER} OR e.key LIKE 'accel.%' OR e.key LIKE 'gps.%') THEN
            r[slot] := e.value::text::float8;
            any_value := true;
          END IF;
        END LOOP;
        RETURN CASE WHEN any_value THEN r END;
      END $$`,
    `CREATE OR REPLACE FUNCTION message_txt(data jsonb) RETURNS jsonb LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
      SELECT jsonb_object_agg(e.key, e.value) FROM jsonb_each(coalesce(data, '{}'::jsonb)) e
      WHERE e.key NOT IN ('location', 'accel')
        AND NOT (jsonb_typeof(e.value) = 'number' AND coalesce(array_position(${textArray(MESSAGE_SLOTS)}, e.key), 0) >= ${FIRST_PARAMETER}) $$`,
    `CREATE OR REPLACE FUNCTION message_accel(num float8[]) RETURNS jsonb LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
      SELECT jsonb_object_agg((${textArray(ACCEL_AXES)})[u.i], u.v)
      FROM unnest(num[1:${ACCEL_AXES.length}]) WITH ORDINALITY AS u(v, i) WHERE u.v IS NOT NULL $$`,
    `CREATE OR REPLACE FUNCTION message_data(num float8[], txt jsonb, loc geometry) RETURNS jsonb
      LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
      SELECT coalesce(txt, '{}'::jsonb)
        || coalesce((SELECT jsonb_object_agg((${textArray(PARAMETER_KEYS)})[u.i], u.v)
          FROM unnest(num[${FIRST_PARAMETER}:]) WITH ORDINALITY AS u(v, i) WHERE u.v IS NOT NULL), '{}'::jsonb)
        || coalesce((SELECT jsonb_build_object('accel', a.v) FROM (SELECT message_accel(num) AS v) a WHERE a.v IS NOT NULL), '{}'::jsonb)
        || CASE WHEN loc IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('location',
          jsonb_build_object('type', 'Point', 'coordinates', jsonb_build_array(ST_X(loc), ST_Y(loc)))) END $$`,
  ];
}

/** The SQL expression of a stored message's `data` (jsonb) as the API shows it. */
export const messageData = (alias: string): string => `message_data(${alias}.num, ${alias}.txt, ${alias}.location)`;

/**
 * SQL condition: the message carries at least one of `keys` (catalog keys, `location`, `accel`): a slot test per
 * numeric key, `?|` on txt for the keys whose values may be text. Keys are checked against the catalog by the caller; they are bound, not
 * spliced, except slot numbers.
 */
export function carriesAny(alias: string, keys: readonly string[]): { sql: string; bindings: unknown[] } {
  const parts: string[] = [];
  const text: string[] = [];
  for (const k of new Set(keys)) {
    if (k === 'location') parts.push(`${alias}.location IS NOT NULL`);
    else if (k === 'accel') parts.push(hasAccel(alias));
    else {
      const slot = SLOT.get(k);
      if (slot && slot >= FIRST_PARAMETER) parts.push(`${alias}.num[${slot}] IS NOT NULL`);
      // a number parameter is only ever in its slot; a scalar's string value, and every other value, is in txt
      if (!slot || PARAMETERS.get(k)?.value !== 'number') text.push(k);
    }
  }
  const bindings: unknown[] = [];
  if (text.length) { parts.push(`${alias}.txt \\?| ?::text[]`); bindings.push(text); }
  return { sql: parts.length ? `(${parts.join(' OR ')})` : 'false', bindings };
}

/** SQL condition: the message carries any telemetry at all (a parameter, accel or a location). */
export const carriesData = (alias: string): string =>
  `(${alias}.num IS NOT NULL OR ${alias}.txt IS NOT NULL OR ${alias}.location IS NOT NULL)`;

/** A message's data as stored: the slots' values (trailing nulls left out) and the other parameters. */
export interface StoredData { num: (number | null)[] | null; txt: Record<string, unknown> | null }

/**
 * `data` (as the gateway decodes a frame: catalog keys, `accel`, `location`) and the GPS extras split into the stored
 * columns. `location` is not kept here: the row's point holds it.
 */
export function storedData(data: Record<string, unknown>, gps?: Record<string, unknown> | null): StoredData {
  const num: (number | null)[] = [];
  let txt: Record<string, unknown> | null = null;
  const put = (slot: number, v: number) => {
    while (num.length < slot - 1) num.push(null);
    num[slot - 1] = v;
  };
  for (const [key, value] of Object.entries(data)) {
    if (key === 'location') continue;
    if (key === 'accel' && value && typeof value === 'object') {
      for (const [axis, v] of Object.entries(value as Record<string, unknown>)) {
        const slot = SLOT.get(`accel.${axis}`);
        if (slot && typeof v === 'number') put(slot, v);
      }
      continue;
    }
    const slot = SLOT.get(key);
    if (slot && slot >= FIRST_PARAMETER && typeof value === 'number') put(slot, value);
    else (txt ??= {})[key] = value;
  }
  if (gps) {
    for (const [field, v] of Object.entries(gps)) {
      const slot = SLOT.get(`gps.${field}`);
      if (slot && typeof v === 'number') put(slot, v);
    }
  }
  return { num: num.length ? num : null, txt };
}

/** The catalog's numeric parameters without a slot (none, unless the catalog gained one and MESSAGE_SLOTS did not). */
export const parametersWithoutSlot = (): string[] =>
  CATALOG.filter((p) => (p.value === 'number' || p.value === 'scalar') && !SLOT.has(p.key)).map((p) => p.key);

/**
 * SQL rows (one column, `key`) of what the message `m` carries, read from its columns without building its data: each
 * non-null slot as `#<slot>`, each txt key, and `location`. dataKeysOf turns them into data's keys.
 */
export const carriedKeys = (m: string): string => `SELECT '#' || u.i AS key FROM unnest(${m}.num) WITH ORDINALITY AS u(v, i)
    WHERE u.v IS NOT NULL
    UNION ALL SELECT jsonb_object_keys(${m}.txt)
    UNION ALL SELECT 'location' WHERE ${m}.location IS NOT NULL`;

/** The keys of `data` that carriedKeys' rows name: a slot's parameter, `accel` for an axis; GPS extras are not data. */
export function dataKeysOf(carried: Iterable<string>): Set<string> {
  const keys = new Set<string>();
  for (const k of carried) {
    if (!k.startsWith('#')) { keys.add(k); continue; }
    const slotKey = MESSAGE_SLOTS[Number(k.slice(1)) - 1];
    if (!slotKey || slotKey.startsWith('gps.')) continue;
    keys.add(slotKey.startsWith('accel.') ? 'accel' : slotKey);
  }
  return keys;
}

/** SQL condition: the message carried an accelerometer window (any axis). */
export const hasAccel = (alias: string): string =>
  `(${ACCEL_AXES.map((a) => `${numAt(alias, `accel.${a}`)} IS NOT NULL`).join(' OR ')})`;

