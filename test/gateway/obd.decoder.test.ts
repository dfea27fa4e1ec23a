import { describe, expect, it } from 'vitest';
import { PARAMETERS, validateValue } from '../../lib/catalog.js';
import {
  MODE01_PIDS, decodeDtcs, decodePids, decodeVin, isValidVinCheckDigit, parseHexBytes,
} from '../../gateway/obd.decoder.js';

describe('decodePids', () => {
  it.each([
    ['00', 'BE 1F A8 13', {}],
    ['01', '00 07 65 00', { troubleCodesAndTestInfo: 'MIL off; 0 DTCs; spark ignition; misfire: complete, ' +
      'fuel system: complete, components: complete, catalyst: complete, evaporative system: complete, ' +
      'oxygen sensor: complete, oxygen sensor heater: complete' }],
    ['01', '83 1F 00 00', { troubleCodesAndTestInfo: 'MIL on; 3 DTCs; compression ignition; ' +
      'misfire: incomplete, fuel system: complete, components: complete' }],
    ['03', '02 00', { fuelSystemStatus: 'Closed loop' }],
    ['03', '01 02', { fuelSystemStatus: 'System 1: Open loop, engine cold; System 2: Closed loop' }],
    ['04', '4A', { calculatedLoadValue: 29.019608 }],
    ['05', '7B', { coolantTemp: 83 }],
    ['06', '80', { shortTermFuelTrimBank1: 0 }],
    ['06', '00', { shortTermFuelTrimBank1: -100 }],
    ['07', 'FF', { longTermFuelTrimBank1: 99.21875 }],
    ['09', '7E', { longTermFuelTrimBank2: -1.5625 }],
    ['0A', '64', { fuelPressure: 300 }],
    ['0B', '65', { intakeManifoldPressure: 101 }],
    ['0C', '1AF8', { rpm: 1726 }],
    ['0C', 'ff ff', { rpm: 16383.75 }],
    ['0D', '3C', { vehicleSpeed: 60 }],
    ['0E', 'A6', { timingAdvance: 19 }],
    ['0E', '00', { timingAdvance: -64 }],
    ['0F', '46', { intakeAirTemperature: 30 }],
    ['10', '01F4', { massAirFlow: 5 }],
    ['10', '01C1', { massAirFlow: 4.49 }],
    ['11', '80', { absoluteThrottleSensorPosition: 50.196078 }],
    ['12', '01', { secondaryAirStatus: 'UPS' }],
    ['12', '04', { secondaryAirStatus: 'OFF' }],
    ['13', '03', { oxygenSensorLocations: ['Bank 1 Sensor 1', 'Bank 1 Sensor 2'] }],
    ['13', '11', { oxygenSensorLocations: ['Bank 1 Sensor 1', 'Bank 2 Sensor 1'] }],
    ['14', '5A 8A', { oxygenSensorVoltage1a: 0.45, shortTermFuelTrim1a: 7.8125 }],
    ['14', '5A FF', { oxygenSensorVoltage1a: 0.45 }],
    ['1B', 'C8 80', { oxygenSensorVoltage2d: 1, shortTermFuelTrim2d: 0 }],
    ['1C', '01', { designOBDRequirements: 'OBD-II as defined by the CARB' }],
    ['1C', '06', { designOBDRequirements: 'EOBD (Europe)' }],
    ['1C', 'FE', { designOBDRequirements: 'Reserved (0xFE)' }],
    ['1D', '05', { alternateOxygenSensorLocations: 'Bank 1 Sensor 1, Bank 2 Sensor 1' }],
    ['1E', '01', { auxilliaryInputStatus: 'PTO active' }],
    ['1F', '0E10', { runTimeSinceEngineStart: 3600 }],
    ['20', '80 00 00 01', { supportedPIDs2: '21,40' }],
    ['21', '0064', { distanceTraveledMILActivated: 100 }],
    ['22', '0100', { fuelRailPressureRelManifold: 20.224 }],
    ['23', '0100', { fuelRailPressure: 2560 }],
    ['24', '80 00 80 00', { equivalenceRatio1a: 1, voltage1a: 4 }],
    ['2B', 'FF FF FF FF', { equivalenceRatio2d: 1.999969, voltage2d: 7.999878 }],
    ['2C', 'FF', { commandedExhaustGasRecirculation: 100 }],
    ['2D', '80', { exhaustGasRecirculationError: 0 }],
    ['2E', '33', { commandedEvaporativePurge: 20 }],
    ['2F', 'C8', { fuelLevelInput: 78.431373 }],
    ['30', '0A', { numberOfWarmupsSinceDTCsCleared: 10 }],
    ['31', '1388', { distanceSinceDTCsCleared: 5000 }],
    ['32', 'FF FC', { evapSystemVaporPressure1: -1 }],
    ['32', '00 10', { evapSystemVaporPressure1: 4 }],
    ['33', '64', { barometricPressure: 100 }],
    ['34', '80 00 81 00', { equivalenceRatio1aa: 1, current1a: 1 }],
    ['3B', '40 00 7F 00', { equivalenceRatio2dd: 0.5, current2d: -1 }],
    ['3C', '1194', { catalystTemp1a: 410 }],
    ['3F', '0000', { catalystTemp2b: -40 }],
    ['41', '00 07 E5 00', { monitorStatusThisDrivingCycle: 'misfire: complete, fuel system: complete, ' +
      'components: complete, catalyst: complete, evaporative system: complete, oxygen sensor: complete, ' +
      'oxygen sensor heater: complete, EGR system: complete' }],
    ['42', '2EE0', { controlModuleVoltage: 12 }],
    ['42', '3138', { controlModuleVoltage: 12.6 }],
    ['43', '00FF', { absoluteLoadValue: 100 }],
    ['44', '8000', { fuelAirCommandedEquivalenceRatio: 1 }],
    ['45', '33', { relativeThrottlePosition: 20 }],
    ['46', '4B', { ambientAirTemperature: 35 }],
    ['49', '66', { acceleratorPedalPositiond: 40 }],
    ['4C', '00', { commandedThrottleActuatorControl: 0 }],
    ['4D', '003C', { engineRuntimeWhileMILOn: 60 }],
    ['4E', '0100', { engineRuntimeSinceDTCsCleared: 256 }],
    ['4F', '01 02 03 04', { externalEquipmentEquivalenceRatio1: 1, externalO2Voltage1: 2,
      externalO2Current1: 3, externalAbsIntakeManifoldPressure1: 40 }],
    ['51', '01', { fuelType: 'Gasoline' }],
    ['51', '04', { fuelType: 'Diesel' }],
    ['52', 'FF', { ethanolFuelPercentage: 100 }],
    ['53', '0190', { absEvapSystemVaporPressure: 2 }],
    ['54', 'FF 38', { evapSystemVaporPressure2: -200 }],
    ['54', '80 00', { evapSystemVaporPressure2: -32768 }],
    ['55', '80 7E', { '2ndShortTermFuelTrim1': 0, '2ndShortTermFuelTrim3': -1.5625 }],
    ['58', 'FF 00', { '2ndLongTermFuelTrim2': 99.21875, '2ndLongTermFuelTrim4': -100 }],
    ['59', '0100', { absFuelRailPressure: 2560 }],
    ['5A', '80', { relativeAcceleratorPosition: 50.196078 }],
    ['5B', 'CC', { hybridBatteryLife: 80 }],
    ['5C', '82', { engineOilTemperature: 90 }],
    ['5D', '6900', { fuelInjectionTiming: 0 }],
    ['5E', '0190', { engineFuelRate: 20 }],
    ['5F', '0E', { emissionReqs: 'Heavy Duty Vehicles (EURO IV) B1' }],
    ['61', '7D', { driversDemandEnginePercentTorque: 0 }],
    ['62', 'FF', { actualEnginePercentTorque: 130 }],
    ['63', '0140', { engineReferenceTorque: 320 }],
    ['64', '7D 8C 96 A0 AA', { enginePercentTorqueData: 0 }],
  ])('decodes PID %s data %s', (pid, hex, expected) => {
    expect(decodePids({ [pid]: hex })).toEqual({ data: expected, errors: [] });
  });

  it('accepts lowercase PIDs and hex with any whitespace', () => {
    expect(decodePids({ '0c': '1a\nf8', '0d': ' 3c ' })).toEqual({ data: { rpm: 1726, vehicleSpeed: 60 }, errors: [] });
  });

  it('decodes the good PIDs and names each bad one with the reason', () => {
    const r = decodePids({ '0D': '3C', '65': '00', '0C': '1A', '05': 'ZZ', '0E': '7', '010C': '1AF8', '12': '03', '0B': 40 });
    expect(r.data).toEqual({ vehicleSpeed: 60 });
    expect(r.errors.sort()).toEqual([
      'PID 010C: not a PID (expected 2 hex digits, without the service byte)',
      'PID 05: data "ZZ" is not hex',
      'PID 0B: data must be a hex string',
      'PID 0C: expected 2 data bytes, got 1',
      'PID 0E: data "7" has an odd number of hex digits (1)',
      'PID 12: unknown secondary air status 0x03',
      'PID 65: not a supported service 01 PID',
    ]);
  });

  it('only produces catalog keys, with values the catalog accepts, for any data bytes', () => {
    for (const [pid, entry] of Object.entries(MODE01_PIDS)) {
      for (const key of entry.keys) expect(PARAMETERS.has(key), `${pid} ${key}`).toBe(true);
      for (const fill of [0x00, 0x01, 0x7f, 0x80, 0xfe, 0xff]) {
        const { data } = decodePids({ [pid]: fill.toString(16).padStart(2, '0').repeat(entry.bytes) });
        for (const [key, value] of Object.entries(data)) {
          expect(entry.keys, `${pid} ${key}`).toContain(key);
          expect(validateValue(key, value), `${pid} ${fill}`).toBeNull();
        }
      }
    }
  });
});

describe('decodeVin', () => {
  const VIN = '1HGCM82633A004352';
  it.each([
    ['a plain VIN', VIN],
    ['a lowercase plain VIN', '1hgcm82633a004352'],
    ['multi-message hex on one line', '49 02 01 00 00 00 31 49 02 02 48 47 43 4D 38 49 02 03 32 36 33 33 41 49 02 04 30 30 34 33 35 32'],
    ['legacy 5-message hex on separate lines', '49 02 01 00 00 00 31\n49 02 02 48 47 43 4D\n49 02 03 38 32 36 33\r\n49 02 04 33 41 30 30\n49 02 05 34 33 35 32'],
    ['a single CAN message', '4902013148474' + '34D38323633334130303433353' + '2'],
    ['ELM327 CAN lines with byte count and frame numbers', '014\n0: 49 02 01 31 48 47\n1: 43 4D 38 32 36 33 33\n2: 41 30 30 34 33 35 32'],
    ['data bytes without a header', '31 48 47 43 4D 38 32 36 33 33 41 30 30 34 33 35 32'],
  ])('decodes %s', (_, raw) => {
    expect(decodeVin(raw)).toEqual({ vin: VIN });
  });

  it.each([
    ['1HGCM82633A00435', 'VIN must have 17 characters, got 16'],
    ['1HGCM82633A0O4352', 'VIN contains "O" (I, O and Q are not used in VINs)'],
    ['1HGCM-2633A004352', 'VIN is neither 17 characters nor hex'],
    ['49 02 01 31 48 4', 'VIN hex has an odd number of hex digits (11)'],
    ['49 02 01 00 00 00 31 49 02 03 48 47 43 4D', 'VIN hex has a malformed "49 02 02" message header'],
    ['49 02 01 31 48 47 43 4D 38 32 36 33 33 41 30 30 34 33 35', 'VIN must have 17 characters, got 16'],
    ['49 02 01 31 48 47 43 4D 38 32 36 33 33 41 30 30 34 33 35 0A', 'VIN hex contains non-printable bytes'],
  ])('refuses %j', (raw, error) => {
    expect(decodeVin(raw)).toEqual({ error });
  });
});

describe('isValidVinCheckDigit', () => {
  it('checks the ISO 3779 position-9 check digit, including X', () => {
    expect(isValidVinCheckDigit('1HGCM82633A004352')).toBe(true);
    expect(isValidVinCheckDigit('1M8GDM9AXKP042788')).toBe(true);
    expect(isValidVinCheckDigit('11111111111111111')).toBe(true);
    expect(isValidVinCheckDigit('1HGCM82643A004352')).toBe(false);
    expect(isValidVinCheckDigit('WVWZZZ1JZXW000001')).toBe(false); // European VINs often carry none
    expect(isValidVinCheckDigit('1HGCM82633A00435')).toBe(false);
  });
});

describe('decodeDtcs', () => {
  it('formats raw service 03 bytes per J1979 and ignores 0000 padding', () => {
    expect(decodeDtcs('0100 0300 0000')).toEqual({ codes: ['P0100', 'P0300'], errors: [] });
    expect(decodeDtcs('41 23 81 00 C1 5A 3F FF\n00 00')).toEqual({ codes: ['C0123', 'B0100', 'U015A', 'P3FFF'], errors: [] });
    expect(decodeDtcs('')).toEqual({ codes: [], errors: [] });
  });

  it('accepts a list of codes, upper-casing and dropping duplicates', () => {
    expect(decodeDtcs(['P0100', 'p0300', 'P0100', 'U0073'])).toEqual({ codes: ['P0100', 'P0300', 'U0073'], errors: [] });
  });

  it('names each bad code or bad hex', () => {
    expect(decodeDtcs(['P0100', 'P9999', 42])).toEqual({
      codes: ['P0100'],
      errors: ['dtcs[1] "P9999" is not a DTC like P0100', 'dtcs[2] 42 is not a DTC like P0100'],
    });
    expect(decodeDtcs('01 00 03')).toEqual({ codes: [], errors: ['dtcs hex has an odd number of bytes (3); each code is 2 bytes'] });
    expect(decodeDtcs('P0100')).toEqual({ codes: [], errors: ['dtcs is a string but not hex; send codes like "P0100" as an array'] });
  });
});

describe('parseHexBytes, one pass over the characters', () => {
  /** The same parse written with regexes: slower, plainly right, the reference the one-pass parser must agree with. */
  const reference = (text: string): number[] | string => {
    const compact = text.replace(/\s+/g, '');
    if (!/^[0-9a-fA-F]*$/.test(compact)) return 'is not hex';
    if (compact.length % 2 !== 0) return `has an odd number of hex digits (${compact.length})`;
    const out: number[] = [];
    for (let i = 0; i < compact.length; i += 2) out.push(parseInt(compact.slice(i, i + 2), 16));
    return out;
  };
  // hex digits of both cases, every character \s matches, and characters that are neither
  const alphabet = [...'0123456789abcdefABCDEF', ...' \t\n\v\f\r\u00a0\u1680\u2000\u2005\u200a\u2028\u2029\u202f\u205f\u3000\ufeff',
    ...'gGxX-:,\u200b\u0000é'];

  it('agrees with the regex reference on 20,000 random strings', () => {
    let seed = 13;
    const random = () => { seed = (seed * 1103515245 + 12345) % 2 ** 31; return seed / 2 ** 31; };
    for (let n = 0; n < 20_000; n++) {
      const length = Math.floor(random() * 12);
      // mostly hex and spaces, so that valid inputs are common
      const text = Array.from({ length }, () => alphabet[Math.floor(random() ** 2 * alphabet.length)]).join('');
      expect(parseHexBytes(text), JSON.stringify(text)).toEqual(reference(text));
    }
  });
});
