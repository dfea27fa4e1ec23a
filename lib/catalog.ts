// Telemetry parameter catalog: the only place that knows parameter keys (from vinli-cli
// lib/parameters.json; docs/reference/mqtt-frames.md). Ranges are the physical range of the SAE J1979 mode 01
// encoding, widened to a round bound where the formula's maximum has more than 6 decimals so that
// a decoded value rounded to 6 decimals still fits.

import { preview } from './json-bounds.js';

export type DataType = 'decimal' | 'string';
/** How a message value is checked: a number in [min, max], a string, an array of strings, or
 *  (parameters the source gives no dataType) any string or number. */
export type ValueKind = 'number' | 'string' | 'string[]' | 'scalar';

export interface Parameter {
  readonly key: string;
  readonly name: string;
  /** Unit as the source spells it; '' for unitless decimals, null for non-decimals. */
  readonly units: string | null;
  readonly dataType: DataType | null;
  readonly value: ValueKind;
  readonly min?: number;
  readonly max?: number;
}

/** Longest string value accepted for a string parameter. */
export const MAX_STRING_LENGTH = 1024;

/**
 * Largest magnitude of a number given for a parameter without a dataType (`scalar`): 2^32 − 1, the most a 4-byte
 * OBD data field encodes. JSON takes up to 1.8e308, but SQL that squares or sums such values overflows float8.
 */
export const SCALAR_NUMBER_LIMIT = 4294967295;

/** Unit and plausible range of a numeric frame field outside `data` (gateway/frame.decoder.ts). */
export interface FieldRange { readonly units: string; readonly min: number; readonly max: number; readonly integer?: boolean }

const field = (units: string, min: number, max: number, integer = false): FieldRange =>
  Object.freeze(integer ? { units, min, max, integer } : { units, min, max });
/** m/s², each accelerometer axis: ±2000 is ~204 g, the range of crash-grade (high-g) accelerometers. */
const ACCEL = field('m/s²', -2000, 2000);

/**
 * The frame's numeric fields outside `data`, by path. Ranges are physical (lat/lon, heading, percentages) or well
 * beyond any road vehicle (speed, altitude), so that a value out of them is a broken or hostile device, refused at
 * decode: past them the statements that square or multiply values (collisions, trips, distance) overflow float8,
 * which failed the frame's whole batch.
 */
export const FRAME_FIELDS: Readonly<Record<string, FieldRange>> = Object.freeze({
  'location.lat': field('deg', -90, 90),
  'location.lon': field('deg', -180, 180),
  /** m above sea level: the Dead Sea shore is −430 m; 20 km is above any road and most aircraft. */
  'location.alt': field('m', -1000, 20000),
  /** km/h over ground (as vehicleSpeed): twice what the fastest production cars reach. */
  'location.speed': field('km/h', 0, 1000),
  'location.heading': field('deg', 0, 360),
  /** Horizontal dilution of precision; receivers report 99.99 without a fix. */
  'location.hdop': field('', 0, 100),
  'location.satellites': field('', 0, 255, true),
  'accel.maxX': ACCEL, 'accel.maxY': ACCEL, 'accel.maxZ': ACCEL, 'accel.minX': ACCEL, 'accel.minY': ACCEL, 'accel.minZ': ACCEL,
  'battery.voltage': field('V', 0, 30),
  'battery.crankingVoltage': field('V', 0, 30),
  'battery.soc': field('%', 0, 100),
  /** g, the device's own impact reading. */
  'collision.peakG': field('g', 0, 1000),
});

/** Range of any other `collision` field (the device names them): a magnitude no unit of an impact reaches. */
export const COLLISION_FIELD: FieldRange = field('', -1e6, 1e6);

type Range = readonly [number, number];
const PCT: Range = [0, 100];
const TRIM: Range = [-100, 99.21875]; // (A-128)*100/128
const TEMP: Range = [-40, 215];
const O2V: Range = [0, 1.275]; // A/200
const WORD: Range = [0, 65535]; // 256A+B
const LAMBDA: Range = [0, 2]; // 2/65536*(256A+B)
const WIDE_V: Range = [0, 8]; // 8/65536*(256C+D)
const WIDE_MA: Range = [-128, 128]; // (256C+D)/256-128
const CAT_TEMP: Range = [-40, 6513.5]; // (256A+B)/10-40
const TORQUE_PCT: Range = [-125, 130];

const dec = (key: string, name: string, units: string, [min, max]: Range): Parameter =>
  ({ key, name, units, dataType: 'decimal', value: 'number', min, max });
const str = (key: string, name: string, value: ValueKind = 'string'): Parameter =>
  ({ key, name, units: null, dataType: 'string', value });
const untyped = (key: string, name: string): Parameter =>
  ({ key, name, units: null, dataType: null, value: 'scalar' });

const o2 = (bank: 1 | 2, s: 'a' | 'b' | 'c' | 'd') => [
  dec(`oxygenSensorVoltage${bank}${s}`, `O2 Sensor Voltage ${bank}${s}`, 'V', O2V),
  dec(`shortTermFuelTrim${bank}${s}`, `Short Term Fuel Trim ${bank}${s}`, '%', TRIM),
];
const wideVoltage = (bank: 1 | 2, s: 'a' | 'b' | 'c' | 'd') => [
  dec(`equivalenceRatio${bank}${s}`, `Equivalence Ratio ${bank}${s}`, '', LAMBDA),
  dec(`voltage${bank}${s}`, `Voltage ${bank}${s}`, 'V', WIDE_V),
];
const wideCurrent = (bank: 1 | 2, s: 'a' | 'b' | 'c' | 'd') => [
  dec(`equivalenceRatio${bank}${s}${s}`, `Equivalence Ratio ${bank}${s}${s}`, '', LAMBDA),
  dec(`current${bank}${s}`, `Current ${bank}${s}`, 'mA', WIDE_MA),
];
const SENSORS = ['a', 'b', 'c', 'd'] as const;
const perSensor = (f: (bank: 1 | 2, s: 'a' | 'b' | 'c' | 'd') => Parameter[]) =>
  ([1, 2] as const).flatMap((bank) => SENSORS.flatMap((s) => f(bank, s)));

export const CATALOG: readonly Parameter[] = Object.freeze([
  str('troubleCodesAndTestInfo', 'Trouble Codes'),
  str('fuelSystemStatus', 'Fuel System Status'),
  dec('calculatedLoadValue', 'Calculated Load Value', '%', PCT),
  dec('coolantTemp', 'Coolant Temp', 'degC', TEMP),
  dec('shortTermFuelTrimBank1', 'Short Term Fuel Trim 1', '%', TRIM),
  dec('longTermFuelTrimBank1', 'Long Term Fuel Trim 1', '%', TRIM),
  dec('shortTermFuelTrimBank2', 'Short Term Fuel Trim 2', '%', TRIM),
  dec('longTermFuelTrimBank2', 'Long Term Fuel Trim 2', '%', TRIM),
  dec('fuelPressure', 'Fuel Pressure', 'kPa (guage)', [0, 765]), // unit misspelled in the source
  dec('intakeManifoldPressure', 'Manifold Pressure', 'kPa (absolute)', [0, 255]),
  dec('rpm', 'RPM', 'rpm', [0, 16383.75]),
  dec('vehicleSpeed', 'Speed', 'km/h', [0, 255]),
  dec('timingAdvance', 'Timing Advance', 'deg', [-64, 63.5]),
  dec('intakeAirTemperature', 'Intake Air Temp', 'degC', TEMP),
  dec('massAirFlow', 'Mass Airflow', 'g/s', [0, 655.35]),
  dec('absoluteThrottleSensorPosition', 'Throttle Position', '%', PCT),
  str('secondaryAirStatus', '2nd Air Status'),
  str('oxygenSensorLocations', 'O2 Sensor Locations', 'string[]'),
  ...perSensor(o2),
  str('designOBDRequirements', 'Design OBD Reqs'),
  str('alternateOxygenSensorLocations', 'Alternate O2 Sensors'),
  str('auxilliaryInputStatus', 'Aux Input Status'),
  dec('runTimeSinceEngineStart', 'Run Time', 's', WORD),
  str('supportedPIDs2', 'Supported PIDs 2'),
  dec('distanceTraveledMILActivated', 'MIL Distance', 'km', WORD),
  dec('fuelRailPressureRelManifold', 'Rel. Fuel Rail Pressure', 'kPa', [0, 5177.265]),
  dec('fuelRailPressure', 'Fuel Rail Pressure', 'kPa (gauge)', [0, 655350]),
  ...perSensor(wideVoltage),
  dec('commandedExhaustGasRecirculation', 'Commanded EGR', '%', PCT),
  dec('exhaustGasRecirculationError', 'EGR error', '%', TRIM),
  dec('commandedEvaporativePurge', 'Evaporative Purge', '%', PCT),
  dec('fuelLevelInput', 'Fuel Level Input', '%', PCT),
  dec('numberOfWarmupsSinceDTCsCleared', 'Warmups Since DTCs Cleared', '', [0, 255]),
  dec('distanceSinceDTCsCleared', 'Distance Since DTCs Cleared', 'km', WORD),
  dec('evapSystemVaporPressure1', 'Evap. Vapor Pressure 1', 'Pa', [-8192, 8191.75]),
  dec('barometricPressure', 'Barometric Pressure', 'kPa (abs)', [0, 255]),
  ...perSensor(wideCurrent),
  dec('catalystTemp1a', 'Catalyst Temp 1a', 'degC', CAT_TEMP),
  dec('catalystTemp2a', 'Catalyst Temp 2a', 'degC', CAT_TEMP),
  dec('catalystTemp1b', 'Catalyst Temp 1b', 'degC', CAT_TEMP),
  dec('catalystTemp2b', 'Catalyst Temp 2b', 'degC', CAT_TEMP),
  str('monitorStatusThisDrivingCycle', 'Monitor Status'),
  dec('controlModuleVoltage', 'Control Mod. Voltage', 'V', [0, 65.535]),
  dec('absoluteLoadValue', 'Abs. Load Value', '%', [0, 25700]),
  dec('fuelAirCommandedEquivalenceRatio', 'Air/Fuel Ratio', '', LAMBDA),
  dec('relativeThrottlePosition', 'Rel. Throttle Position', '%', PCT),
  dec('ambientAirTemperature', 'Ambient Air Temp', 'degC', TEMP),
  dec('absoluteThrottlePositionb', 'Abs. Throttle Position B', '%', PCT),
  dec('absoluteThrottlePositionc', 'Abs. Throttle Position C', '%', PCT),
  dec('acceleratorPedalPositiond', 'Accelerator Position D', '%', PCT),
  dec('acceleratorPedalPositione', 'Accelerator Position E', '%', PCT),
  dec('acceleratorPedalPositionf', 'Accelerator Position F', '%', PCT),
  dec('commandedThrottleActuatorControl', 'Throttle Actuator Position', '%', PCT),
  dec('engineRuntimeWhileMILOn', 'Runtime With MIL On', 'min', WORD),
  dec('engineRuntimeSinceDTCsCleared', 'Runtime Since DTCs Cleared', 'min', WORD),
  dec('externalEquipmentEquivalenceRatio1', 'External Equiv. Ratio 1', '', [0, 255]),
  dec('externalO2Voltage1', 'External O2 Voltage 1', 'V', [0, 255]),
  dec('externalO2Current1', 'External O2 Current', 'mA', [0, 255]),
  dec('externalAbsIntakeManifoldPressure1', 'External Manifold Pressure 1', 'kPa', [0, 2550]),
  str('extTestEquipmentConfig2', 'External Config 2'),
  str('fuelType', 'Fuel Type'),
  dec('ethanolFuelPercentage', 'Ethanol Fuel %', '%', PCT),
  dec('absEvapSystemVaporPressure', 'Abs. Evap. Vapor Pressure', 'kPa', [0, 327.675]),
  dec('evapSystemVaporPressure2', 'Evap. Vapor Pressure 2', 'Pa', [-32768, 32767]),
  dec('2ndShortTermFuelTrim1', '2nd Short Term Fuel Trim 1', '%', TRIM),
  dec('2ndShortTermFuelTrim3', '2nd Short Term Fuel Trim 3', '%', TRIM),
  dec('2ndLongTermFuelTrim1', '2nd Long Term Fuel Trim 1', '%', TRIM),
  dec('2ndLongTermFuelTrim3', '2nd Long Term Fuel Trim 3', '%', TRIM),
  dec('2ndShortTermFuelTrim2', '2nd Short Term Fuel Trim 2', '%', TRIM),
  dec('2ndShortTermFuelTrim4', '2nd Short Term Fuel Trim 4', '%', TRIM),
  dec('2ndLongTermFuelTrim2', '2nd Long Term Fuel Trim 2', '%', TRIM),
  dec('2ndLongTermFuelTrim4', '2nd Long Term Fuel Trim 4', '%', TRIM),
  dec('absFuelRailPressure', 'Abs Fuel Rail Pressure', 'kPa', [0, 655350]),
  dec('relativeAcceleratorPosition', 'Rel. Accelerator Position', '%', PCT),
  dec('hybridBatteryLife', 'Hybrid Battery Life', '%', PCT),
  dec('engineOilTemperature', 'Engine Oil Temp', 'degC', TEMP),
  dec('fuelInjectionTiming', 'Fuel Injection Timing', 'deg', [-210, 302]),
  dec('engineFuelRate', 'Engine Fuel Rate', 'L/h', [0, 3276.75]),
  str('emissionReqs', 'Emission Reqs'),
  dec('driversDemandEnginePercentTorque', 'Demand Engine % Torque', '%', TORQUE_PCT),
  dec('actualEnginePercentTorque', 'Engine % Torque', '%', TORQUE_PCT),
  dec('engineReferenceTorque', 'Engine Reference Torque', 'Nm', WORD),
  dec('enginePercentTorqueData', 'Engine % Torque Data', '%', TORQUE_PCT),
  untyped('auxIO', 'Auxilliary I/O'),
  untyped('mafSensor', 'Mass Air Flow Sensor'),
  // The source swaps name and description for this key; the short label is used here.
  untyped('engineCoolantTemp', 'Engine coolant temperature'),
  untyped('intakeAirTempSensor', 'Intake Air Temp Sensor'),
  untyped('commandedEGRAndError', 'Commanded EGR/Error'),
  untyped('intakeAirFlow', 'Intake Air Flow'),
  untyped('egrTemp', 'EGR Temp'),
  untyped('throttleActuatorControlPosition', 'Throttle Control/Position'),
  untyped('fuelPressureControlSystem', 'Fuel Pressure Control'),
  untyped('injectionPressureControlSystem', 'Injection Pressure Control'),
  untyped('turbochargerCompressorInletPressure', 'Turbocharger Pressure'),
  untyped('boostPressureControl', 'Boost Pressure Control'),
  untyped('vgtControl', 'VGT Control'),
  untyped('wastegateControl', 'Wastegate Control'),
  untyped('exhaustPressure', 'Exhaust Pressure'),
  untyped('turbochargerRPM', 'Turbocharger RPM'),
  untyped('tcTempA', 'Turbocharger A Temp'),
  untyped('tcTempC', 'Turbocharger B Temp'),
  untyped('cact', 'Charge Air Cooler Temp'),
  str('egtBank1', 'Exhaust Gas Temp 1'),
  str('egtBank2', 'Exhaust Gas Temp 2'),
  untyped('dpf1', 'Diesel Filter 1'),
  untyped('dpf2', 'Diesel Filter 2'),
  untyped('dpfTemp', 'Diesel Filter Temp'),
  untyped('noxNTEControlAreaStatus', 'Nox NTE Status'),
  untyped('pmNTEControlAreaStatus', 'PM NTE Status'),
  untyped('engineRuntime', 'Engine Runtime'),
  untyped('engineRuntime1', 'Engine Runtime 1'),
  untyped('engineRuntime2', 'Engine Runtime 2'),
  untyped('noxSensor', 'Nox Sensor'),
  untyped('manifoldTemp', 'Manifold Temp'),
  untyped('noxControlSystem', 'Nox Control System'),
  untyped('pmSensor', 'Particulate Matter'),
  untyped('intakeManifoldAbsPressure', 'Abs Intake Manifold Pressure'),
  untyped('reservediISOSAE', 'ISO/SAE Reserved'),
].map((p) => Object.freeze(p)));

export const PARAMETERS: ReadonlyMap<string, Parameter> = new Map(CATALOG.map((p) => [p.key, p]));

export function isParameter(key: string): boolean {
  return PARAMETERS.has(key);
}

/** Only decimal parameters may be used in rule boundaries. */
export function isDecimalParameter(key: string): boolean {
  return PARAMETERS.get(key)?.dataType === 'decimal';
}

/** Values come from outside (device frames, rule bodies): printed without recursing into deep nesting. */
const show = (value: unknown) => preview(value, 60);

const isShortString = (v: unknown): v is string =>
  typeof v === 'string' && v.length <= MAX_STRING_LENGTH;

/** Why `value` is not acceptable for parameter `key`, or null when it is. */
export function validateValue(key: string, value: unknown): string | null {
  const p = PARAMETERS.get(key);
  if (!p) return `${key} is not a known parameter`;
  switch (p.value) {
    case 'number': {
      const ok = typeof value === 'number' && Number.isFinite(value) &&
        value >= (p.min as number) && value <= (p.max as number);
      return ok ? null : `${key} must be a number between ${p.min} and ${p.max}, got ${show(value)}`;
    }
    case 'string':
      return isShortString(value) ? null :
        `${key} must be a string of at most ${MAX_STRING_LENGTH} characters, got ${show(value)}`;
    case 'string[]':
      return Array.isArray(value) && value.length <= 64 && value.every(isShortString) ? null :
        `${key} must be an array of strings, got ${show(value)}`;
    case 'scalar':
      return isShortString(value) || (typeof value === 'number' && Math.abs(value) <= SCALAR_NUMBER_LIMIT) ? null :
        `${key} must be a string or a number between -${SCALAR_NUMBER_LIMIT} and ${SCALAR_NUMBER_LIMIT}, got ${show(value)}`;
  }
}
