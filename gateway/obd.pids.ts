// SAE J1979 service 01 PID table: PID (2 uppercase hex digits) → catalog keys, data length and
// decoder. Formulas per J1979 / ISO 15031-5; A, B, C, D are the data bytes in order.
// Oxygen sensor PIDs (14–1B, 24–2B, 34–3B) use the PID 13 layout (2 banks × 4 sensors), the only
// one the catalog has keys for.

export interface PidEntry {
  /** Catalog keys this PID can produce (empty for the supported-PID bitmaps we ignore). */
  readonly keys: readonly string[];
  /** Expected number of data bytes. */
  readonly bytes: number;
  /** Decoded values by catalog key; throws an Error whose message says why the bytes are invalid. */
  decode(b: number[]): Record<string, unknown>;
  /** For a PID of one catalog key: that key's value alone (what `decode` gives under `keys[0]`), no object built. */
  readonly value?: (b: number[]) => unknown;
}

/** Rounds to 6 decimals to drop float artefacts (0.1 + 0.2 style); never yields -0. */
export const round6 = (x: number): number => Math.round(x * 1e6) / 1e6 + 0;

const word = (b: number[], i = 0) => b[i] * 256 + b[i + 1];
const pct = (a: number) => round6((a * 100) / 255);
const trim = (a: number) => round6(((a - 128) * 100) / 128);
const signed16 = (b: number[], i = 0) => (word(b, i) ^ 0x8000) - 0x8000;

const one = (key: string, bytes: number, f: (b: number[]) => unknown): PidEntry =>
  ({ keys: [key], bytes, decode: (b) => ({ [key]: f(b) }), value: f });
const ignored: PidEntry = { keys: [], bytes: 4, decode: () => ({}) };

function lookup(table: Record<number, string>, what: string, v: number): string {
  const s = table[v];
  if (s === undefined) throw new Error(`unknown ${what} 0x${hex(v)}`);
  return s;
}
const hex = (v: number) => v.toString(16).toUpperCase().padStart(2, '0');

/** PIDs 00/20/40/...: bit 7 of A = PID base+1 … bit 0 of D = PID base+0x20. */
export function supportedPids(base: number, b: number[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < 32; i++) if (b[i >> 3] & (0x80 >> (i & 7))) out.push(hex(base + i + 1));
  return out;
}

const SPARK_MONITORS = ['catalyst', 'heated catalyst', 'evaporative system', 'secondary air system',
  'A/C refrigerant', 'oxygen sensor', 'oxygen sensor heater', 'EGR system'];
const DIESEL_MONITORS = ['NMHC catalyst', 'NOx/SCR monitor', null, 'boost pressure', null,
  'exhaust gas sensor', 'PM filter', 'EGR/VVT system'];
const CONTINUOUS = ['misfire', 'fuel system', 'components'];

/** Readiness monitors of PIDs 01/41 (bytes B–D): "name: complete|incomplete" for each available one. */
function monitors(b: number, c: number, d: number): string {
  const out: string[] = [];
  CONTINUOUS.forEach((name, i) => {
    if (b & (1 << i)) out.push(`${name}: ${b & (0x10 << i) ? 'incomplete' : 'complete'}`);
  });
  const names = b & 0x08 ? DIESEL_MONITORS : SPARK_MONITORS;
  names.forEach((name, i) => {
    if (name && c & (1 << i)) out.push(`${name}: ${d & (1 << i) ? 'incomplete' : 'complete'}`);
  });
  return out.join(', ') || 'no monitors';
}

function monitorStatus(b: number[]): string {
  const [a, bb, c, d] = b;
  const dtcs = a & 0x7f;
  const ignition = bb & 0x08 ? 'compression ignition' : 'spark ignition';
  return `MIL ${a & 0x80 ? 'on' : 'off'}; ${dtcs} DTC${dtcs === 1 ? '' : 's'}; ${ignition}; ` +
    monitors(bb, c, d);
}

const FUEL_SYSTEM: Record<number, string> = {
  0: 'Engine off', 1: 'Open loop, engine cold', 2: 'Closed loop',
  4: 'Open loop, engine load or deceleration fuel cut', 8: 'Open loop, system failure',
  16: 'Closed loop, feedback fault',
};
function fuelSystemStatus([a, b]: number[]): string {
  const s1 = lookup(FUEL_SYSTEM, 'fuel system status', a);
  return b === 0 ? s1 : `System 1: ${s1}; System 2: ${lookup(FUEL_SYSTEM, 'fuel system status', b)}`;
}

const SECONDARY_AIR: Record<number, string> = { 1: 'UPS', 2: 'DNS', 4: 'OFF', 8: 'DIAG' };

const OBD_STANDARD: Record<number, string> = {
  1: 'OBD-II as defined by the CARB', 2: 'OBD as defined by the EPA', 3: 'OBD and OBD-II',
  4: 'OBD-I', 5: 'Not OBD compliant', 6: 'EOBD (Europe)', 7: 'EOBD and OBD-II', 8: 'EOBD and OBD',
  9: 'EOBD, OBD and OBD II', 10: 'JOBD (Japan)', 11: 'JOBD and OBD II', 12: 'JOBD and EOBD',
  13: 'JOBD, EOBD, and OBD II', 14: 'Heavy Duty Vehicles (EURO IV) B1',
  15: 'Heavy Duty Vehicles (EURO V) B2', 16: 'Heavy Duty Vehicles (EURO EEV) C',
  17: 'Engine Manufacturer Diagnostics (EMD)',
  18: 'Engine Manufacturer Diagnostics Enhanced (EMD+)',
  19: 'Heavy Duty On-Board Diagnostics (Child/Partial) (HD OBD-C)',
  20: 'Heavy Duty On-Board Diagnostics (HD OBD)', 21: 'World Wide Harmonized OBD (WWH OBD)',
  23: 'Heavy Duty Euro OBD Stage I without NOx control (HD EOBD-I)',
  24: 'Heavy Duty Euro OBD Stage I with NOx control (HD EOBD-I N)',
  25: 'Heavy Duty Euro OBD Stage II without NOx control (HD EOBD-II)',
  26: 'Heavy Duty Euro OBD Stage II with NOx control (HD EOBD-II N)',
  28: 'Brazil OBD Phase 1 (OBDBr-1)', 29: 'Brazil OBD Phase 2 (OBDBr-2)', 30: 'Korean OBD (KOBD)',
  31: 'India OBD I (IOBD I)', 32: 'India OBD II (IOBD II)',
  33: 'Heavy Duty Euro OBD Stage VI (HD EOBD-IV)',
};

const FUEL_TYPE: Record<number, string> = {
  0: 'Not available', 1: 'Gasoline', 2: 'Methanol', 3: 'Ethanol', 4: 'Diesel', 5: 'LPG', 6: 'CNG',
  7: 'Propane', 8: 'Electric', 9: 'Bifuel running Gasoline', 10: 'Bifuel running Methanol',
  11: 'Bifuel running Ethanol', 12: 'Bifuel running LPG', 13: 'Bifuel running CNG',
  14: 'Bifuel running Propane', 15: 'Bifuel running Electricity',
  16: 'Bifuel running electric and combustion engine', 17: 'Hybrid gasoline', 18: 'Hybrid Ethanol',
  19: 'Hybrid Diesel', 20: 'Hybrid Electric', 21: 'Hybrid running electric and combustion engine',
  22: 'Hybrid Regenerative', 23: 'Bifuel running diesel',
};

const EMISSION_REQS: Record<number, string> = {
  14: 'Heavy Duty Vehicles (EURO IV) B1', 15: 'Heavy Duty Vehicles (EURO V) B2',
  16: 'Heavy Duty Vehicles (EURO EEV) C',
};

const SENSORS = ['a', 'b', 'c', 'd'];
/** PID 13: bits 0–3 bank 1 sensors 1–4, bits 4–7 bank 2 sensors 1–4. */
const o2Locations = ([a]: number[]) =>
  Array.from({ length: 8 }, (_, i) => i).filter((i) => a & (1 << i))
    .map((i) => `Bank ${(i >> 2) + 1} Sensor ${(i & 3) + 1}`);
/** PID 1D: two bits per bank, banks 1–4. */
const altO2Locations = ([a]: number[]) =>
  Array.from({ length: 8 }, (_, i) => i).filter((i) => a & (1 << i))
    .map((i) => `Bank ${(i >> 1) + 1} Sensor ${(i & 1) + 1}`).join(', ');

const table: Record<string, PidEntry> = {
  '00': ignored,
  '01': one('troubleCodesAndTestInfo', 4, monitorStatus),
  '03': one('fuelSystemStatus', 2, fuelSystemStatus),
  '04': one('calculatedLoadValue', 1, ([a]) => pct(a)),
  '05': one('coolantTemp', 1, ([a]) => a - 40),
  '06': one('shortTermFuelTrimBank1', 1, ([a]) => trim(a)),
  '07': one('longTermFuelTrimBank1', 1, ([a]) => trim(a)),
  '08': one('shortTermFuelTrimBank2', 1, ([a]) => trim(a)),
  '09': one('longTermFuelTrimBank2', 1, ([a]) => trim(a)),
  '0A': one('fuelPressure', 1, ([a]) => a * 3),
  '0B': one('intakeManifoldPressure', 1, ([a]) => a),
  '0C': one('rpm', 2, (b) => word(b) / 4),
  '0D': one('vehicleSpeed', 1, ([a]) => a),
  '0E': one('timingAdvance', 1, ([a]) => a / 2 - 64),
  '0F': one('intakeAirTemperature', 1, ([a]) => a - 40),
  '10': one('massAirFlow', 2, (b) => round6(word(b) / 100)),
  '11': one('absoluteThrottleSensorPosition', 1, ([a]) => pct(a)),
  '12': one('secondaryAirStatus', 1, ([a]) => lookup(SECONDARY_AIR, 'secondary air status', a)),
  '13': one('oxygenSensorLocations', 1, o2Locations),
  '1C': one('designOBDRequirements', 1, ([a]) => OBD_STANDARD[a] ?? `Reserved (0x${hex(a)})`),
  '1D': one('alternateOxygenSensorLocations', 1, altO2Locations),
  '1E': one('auxilliaryInputStatus', 1, ([a]) => (a & 1 ? 'PTO active' : 'PTO inactive')),
  '1F': one('runTimeSinceEngineStart', 2, (b) => word(b)),
  '20': one('supportedPIDs2', 4, (b) => supportedPids(0x20, b).join(',')),
  '21': one('distanceTraveledMILActivated', 2, (b) => word(b)),
  '22': one('fuelRailPressureRelManifold', 2, (b) => round6(word(b) * 0.079)),
  '23': one('fuelRailPressure', 2, (b) => word(b) * 10),
  '2C': one('commandedExhaustGasRecirculation', 1, ([a]) => pct(a)),
  '2D': one('exhaustGasRecirculationError', 1, ([a]) => trim(a)),
  '2E': one('commandedEvaporativePurge', 1, ([a]) => pct(a)),
  '2F': one('fuelLevelInput', 1, ([a]) => pct(a)),
  '30': one('numberOfWarmupsSinceDTCsCleared', 1, ([a]) => a),
  '31': one('distanceSinceDTCsCleared', 2, (b) => word(b)),
  '32': one('evapSystemVaporPressure1', 2, (b) => signed16(b) / 4),
  '33': one('barometricPressure', 1, ([a]) => a),
  '3C': one('catalystTemp1a', 2, (b) => round6(word(b) / 10 - 40)),
  '3D': one('catalystTemp2a', 2, (b) => round6(word(b) / 10 - 40)),
  '3E': one('catalystTemp1b', 2, (b) => round6(word(b) / 10 - 40)),
  '3F': one('catalystTemp2b', 2, (b) => round6(word(b) / 10 - 40)),
  '40': ignored,
  '41': one('monitorStatusThisDrivingCycle', 4, ([, b, c, d]) => monitors(b, c, d)),
  '42': one('controlModuleVoltage', 2, (b) => round6(word(b) / 1000)),
  '43': one('absoluteLoadValue', 2, (b) => round6((word(b) * 100) / 255)),
  '44': one('fuelAirCommandedEquivalenceRatio', 2, (b) => round6((word(b) * 2) / 65536)),
  '45': one('relativeThrottlePosition', 1, ([a]) => pct(a)),
  '46': one('ambientAirTemperature', 1, ([a]) => a - 40),
  '47': one('absoluteThrottlePositionb', 1, ([a]) => pct(a)),
  '48': one('absoluteThrottlePositionc', 1, ([a]) => pct(a)),
  '49': one('acceleratorPedalPositiond', 1, ([a]) => pct(a)),
  '4A': one('acceleratorPedalPositione', 1, ([a]) => pct(a)),
  '4B': one('acceleratorPedalPositionf', 1, ([a]) => pct(a)),
  '4C': one('commandedThrottleActuatorControl', 1, ([a]) => pct(a)),
  '4D': one('engineRuntimeWhileMILOn', 2, (b) => word(b)),
  '4E': one('engineRuntimeSinceDTCsCleared', 2, (b) => word(b)),
  // Maximum values reported by the vehicle for test equipment scaling (J1979 PID 4F).
  '4F': {
    keys: ['externalEquipmentEquivalenceRatio1', 'externalO2Voltage1', 'externalO2Current1',
      'externalAbsIntakeManifoldPressure1'],
    bytes: 4,
    decode: ([a, b, c, d]) => ({ externalEquipmentEquivalenceRatio1: a, externalO2Voltage1: b,
      externalO2Current1: c, externalAbsIntakeManifoldPressure1: d * 10 }),
  },
  '50': one('extTestEquipmentConfig2', 4, ([a]) => `maximum mass air flow ${a * 10} g/s`),
  '51': one('fuelType', 1, ([a]) => lookup(FUEL_TYPE, 'fuel type', a)),
  '52': one('ethanolFuelPercentage', 1, ([a]) => pct(a)),
  '53': one('absEvapSystemVaporPressure', 2, (b) => round6(word(b) / 200)),
  '54': one('evapSystemVaporPressure2', 2, (b) => signed16(b)),
  '59': one('absFuelRailPressure', 2, (b) => word(b) * 10),
  '5A': one('relativeAcceleratorPosition', 1, ([a]) => pct(a)),
  '5B': one('hybridBatteryLife', 1, ([a]) => pct(a)),
  '5C': one('engineOilTemperature', 1, ([a]) => a - 40),
  '5D': one('fuelInjectionTiming', 2, (b) => round6(word(b) / 128 - 210)),
  '5E': one('engineFuelRate', 2, (b) => round6(word(b) / 20)),
  '5F': one('emissionReqs', 1, ([a]) => EMISSION_REQS[a] ?? `Reserved (0x${hex(a)})`),
  '60': ignored,
  '61': one('driversDemandEnginePercentTorque', 1, ([a]) => a - 125),
  '62': one('actualEnginePercentTorque', 1, ([a]) => a - 125),
  '63': one('engineReferenceTorque', 2, (b) => word(b)),
  // Bytes B–E are torque at engine points 1–4; the catalog has one key, so it takes idle (A).
  '64': one('enginePercentTorqueData', 5, ([a]) => a - 125),
  '80': ignored, 'A0': ignored, 'C0': ignored, 'E0': ignored,
};

// 14–1B: O2 sensor voltage A/200 V and short term trim; B = 0xFF means the trim is not used.
SENSORS.forEach((s, i) => [1, 2].forEach((bank) => {
  const v = `oxygenSensorVoltage${bank}${s}`;
  const t = `shortTermFuelTrim${bank}${s}`;
  table[hex(0x14 + (bank - 1) * 4 + i)] = {
    keys: [v, t], bytes: 2,
    decode: ([a, b]) => (b === 0xff ? { [v]: round6(a / 200) } : { [v]: round6(a / 200), [t]: trim(b) }),
  };
  // 24–2B: wide-range O2 equivalence ratio and voltage.
  const er = `equivalenceRatio${bank}${s}`;
  const volt = `voltage${bank}${s}`;
  table[hex(0x24 + (bank - 1) * 4 + i)] = {
    keys: [er, volt], bytes: 4,
    decode: (b) => ({ [er]: round6((word(b) * 2) / 65536), [volt]: round6((word(b, 2) * 8) / 65536) }),
  };
  // 34–3B: wide-range O2 equivalence ratio and current (offset by 128 mA, so signed).
  const er2 = `equivalenceRatio${bank}${s}${s}`;
  const cur = `current${bank}${s}`;
  table[hex(0x34 + (bank - 1) * 4 + i)] = {
    keys: [er2, cur], bytes: 4,
    decode: (b) => ({ [er2]: round6((word(b) * 2) / 65536), [cur]: round6(word(b, 2) / 256 - 128) }),
  };
}));

// 55–58: secondary O2 sensor trims, A = bank 1 or 2, B = bank 3 or 4.
([['55', 'Short', 1, 3], ['56', 'Long', 1, 3], ['57', 'Short', 2, 4], ['58', 'Long', 2, 4]] as const)
  .forEach(([pid, term, b1, b2]) => {
    const k1 = `2nd${term}TermFuelTrim${b1}`;
    const k2 = `2nd${term}TermFuelTrim${b2}`;
    table[pid] = { keys: [k1, k2], bytes: 2, decode: ([a, b]) => ({ [k1]: trim(a), [k2]: trim(b) }) };
  });

export const MODE01_PIDS: Readonly<Record<string, PidEntry>> = Object.freeze(table);
