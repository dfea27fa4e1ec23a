import { describe, expect, it } from 'vitest';
import {
  CATALOG, MAX_STRING_LENGTH, PARAMETERS, SCALAR_NUMBER_LIMIT, isDecimalParameter, isParameter, validateValue,
} from '../../lib/catalog.js';

describe('CATALOG', () => {
  it('holds the 163 keys of the parameter table, unique, in table order', () => {
    expect(CATALOG).toHaveLength(163);
    expect(new Set(CATALOG.map((p) => p.key)).size).toBe(163);
    const at = (n: number) => CATALOG[n - 1].key; // n = the parameter's row number in the table
    expect([at(1), at(11), at(18), at(19), at(20), at(34), at(43), at(67), at(68)]).toEqual([
      'troubleCodesAndTestInfo', 'rpm', 'oxygenSensorLocations', 'oxygenSensorVoltage1a',
      'shortTermFuelTrim1a', 'shortTermFuelTrim2d', 'equivalenceRatio1a', 'equivalenceRatio1aa', 'current1a',
    ]);
    expect([at(83), at(106), at(110), at(128), at(129), at(131), at(148), at(163)]).toEqual([
      'catalystTemp1a', 'fuelType', '2ndShortTermFuelTrim1', 'enginePercentTorqueData', 'auxIO',
      'engineCoolantTemp', 'egtBank1', 'reservediISOSAE',
    ]);
  });

  it('has 116 decimal, 14 string and 33 untyped parameters', () => {
    const count = (t: string | null) => CATALOG.filter((p) => p.dataType === t).length;
    expect([count('decimal'), count('string'), count(null)]).toEqual([116, 14, 33]);
  });

  it('keeps labels and unit strings as the source spells them', () => {
    expect(PARAMETERS.get('rpm')).toEqual({
      key: 'rpm', name: 'RPM', units: 'rpm', dataType: 'decimal', value: 'number', min: 0, max: 16383.75,
    });
    expect(PARAMETERS.get('vehicleSpeed')).toMatchObject({ name: 'Speed', units: 'km/h', min: 0, max: 255 });
    expect(PARAMETERS.get('fuelPressure')).toMatchObject({ units: 'kPa (guage)', min: 0, max: 765 });
    expect(PARAMETERS.get('fuelRailPressure')?.units).toBe('kPa (gauge)');
    expect(PARAMETERS.get('intakeManifoldPressure')?.units).toBe('kPa (absolute)');
    expect(PARAMETERS.get('barometricPressure')?.units).toBe('kPa (abs)');
    expect(PARAMETERS.get('equivalenceRatio1a')?.units).toBe('');
    expect(PARAMETERS.get('engineFuelRate')).toMatchObject({ units: 'L/h', min: 0, max: 3276.75 });
    expect(PARAMETERS.get('coolantTemp')).toMatchObject({ units: 'degC', min: -40, max: 215 });
    expect(PARAMETERS.get('shortTermFuelTrimBank1')).toMatchObject({ units: '%', min: -100, max: 99.21875 });
    expect(PARAMETERS.get('evapSystemVaporPressure1')).toMatchObject({ units: 'Pa', min: -8192, max: 8191.75 });
    expect(PARAMETERS.get('fuelType')).toEqual({
      key: 'fuelType', name: 'Fuel Type', units: null, dataType: 'string', value: 'string',
    });
    expect(PARAMETERS.get('oxygenSensorLocations')).toMatchObject({ dataType: 'string', value: 'string[]' });
    expect(PARAMETERS.get('auxIO')).toEqual({
      key: 'auxIO', name: 'Auxilliary I/O', units: null, dataType: null, value: 'scalar',
    });
  });

  it('gives every decimal a numeric range and no other parameter one', () => {
    for (const p of CATALOG) {
      if (p.dataType === 'decimal') {
        expect(typeof p.units, p.key).toBe('string');
        expect(p.min! < p.max!, p.key).toBe(true);
      } else {
        expect([p.units, p.min, p.max], p.key).toEqual([null, undefined, undefined]);
      }
    }
  });
});

describe('isParameter / isDecimalParameter', () => {
  it('knows catalog keys and only allows decimals in rule boundaries', () => {
    expect([isParameter('rpm'), isParameter('fuelType'), isParameter('speed'), isParameter('location')])
      .toEqual([true, true, false, false]);
    expect([isDecimalParameter('rpm'), isDecimalParameter('fuelType'), isDecimalParameter('auxIO'),
      isDecimalParameter('nope')]).toEqual([true, false, false, false]);
  });
});

describe('validateValue', () => {
  it.each([
    ['rpm', 0], ['rpm', 16383.75], ['vehicleSpeed', 60], ['coolantTemp', -40],
    ['shortTermFuelTrimBank1', -100], ['shortTermFuelTrimBank1', 99.21875], ['timingAdvance', -64],
    ['fuelType', 'Gasoline'], ['oxygenSensorLocations', ['Bank 1 Sensor 1', 'Bank 1 Sensor 2']],
    ['oxygenSensorLocations', []], ['auxIO', 'PTO active'], ['egrTemp', 412],
    ['turbochargerRPM', SCALAR_NUMBER_LIMIT], ['exhaustPressure', -SCALAR_NUMBER_LIMIT],
  ])('accepts %s = %j', (key, value) => {
    expect(validateValue(key, value)).toBeNull();
  });

  it.each([
    ['rpm', 'fast', 'rpm must be a number between 0 and 16383.75, got "fast"'],
    ['rpm', 16384, 'rpm must be a number between 0 and 16383.75, got 16384'],
    ['rpm', Number.NaN, 'rpm must be a number between 0 and 16383.75, got NaN'],
    ['rpm', null, 'rpm must be a number between 0 and 16383.75, got null'],
    ['rpm', undefined, 'rpm must be a number between 0 and 16383.75, got undefined'],
    ['vehicleSpeed', '60', 'vehicleSpeed must be a number between 0 and 255, got "60"'],
    ['shortTermFuelTrimBank1', -100.5, 'shortTermFuelTrimBank1 must be a number between -100 and 99.21875, got -100.5'],
    ['fuelType', 1, `fuelType must be a string of at most ${MAX_STRING_LENGTH} characters, got 1`],
    ['oxygenSensorLocations', 'Bank 1 Sensor 1', 'oxygenSensorLocations must be an array of strings, got "Bank 1 Sensor 1"'],
    ['oxygenSensorLocations', [1], 'oxygenSensorLocations must be an array of strings, got [1]'],
    ['auxIO', { on: true }, 'auxIO must be a string or a number between -4294967295 and 4294967295, got {"on":true}'],
    ['turbochargerRPM', 1e308, 'turbochargerRPM must be a string or a number between -4294967295 and 4294967295, got 1e+308'],
    ['exhaustPressure', -4294967296, 'exhaustPressure must be a string or a number between -4294967295 and 4294967295, got -4294967296'],
    ['speed', 60, 'speed is not a known parameter'],
  ])('refuses %s = %j with a reason', (key, value, reason) => {
    expect(validateValue(key, value)).toBe(reason);
  });

  it('refuses strings longer than the limit', () => {
    expect(validateValue('fuelType', 'x'.repeat(MAX_STRING_LENGTH))).toBeNull();
    expect(validateValue('fuelType', 'x'.repeat(MAX_STRING_LENGTH + 1))).toBe(
      `fuelType must be a string of at most 1024 characters, got "${'x'.repeat(56)}...`,
    );
  });
});
