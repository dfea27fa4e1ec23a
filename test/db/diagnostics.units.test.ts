import { describe, expect, it } from 'vitest';
import { decodeDtcs, dtcFromBytes } from '../../gateway/obd.decoder.js';
import { dtcInfo, GENERIC_DESCRIPTIONS, isGeneric, subsystemOf } from '../../db/diagnostics/dtc-info.js';
import { batteryReadings, batteryStatus, classify } from '../../db/diagnostics/battery.js';

describe('mode 03 decoding (SAE J1979 / J2012)', () => {
  it('decodes the two bytes of each code into its letter, first digit and three hex digits', () => {
    expect(dtcFromBytes(0x03, 0x01)).toBe('P0301');
    expect(dtcFromBytes(0xc1, 0x00)).toBe('U0100');
    expect(dtcFromBytes(0x41, 0x23)).toBe('C0123');
    expect(dtcFromBytes(0x9a, 0xbc)).toBe('B1ABC');
    expect(dtcFromBytes(0x22, 0x7f)).toBe('P227F');
  });

  it('reads a raw response in hex, skipping 0000 padding and duplicates, and refuses odd lengths', () => {
    expect(decodeDtcs('03 01 C1 00 00 00 03 01')).toEqual({ codes: ['P0301', 'U0100'], errors: [] });
    expect(decodeDtcs('')).toEqual({ codes: [], errors: [] });
    expect(decodeDtcs('030').errors[0]).toMatch(/odd number of hex digits/);
    expect(decodeDtcs(['p0420', 'X1234']).errors).toEqual(['dtcs[1] "X1234" is not a DTC like P0100']);
  });
});

describe('trouble-code information', () => {
  it('derives system and subsystem from the code structure', () => {
    expect(dtcInfo('P0101')).toMatchObject({ system: 'powertrain', subsystem: 'Fuel and air metering', make: 'generic' });
    expect(subsystemOf('P0201')).toBe('Fuel and air metering (injector circuit)');
    expect(subsystemOf('P0301')).toBe('Ignition system or misfire');
    expect(subsystemOf('P0420')).toBe('Auxiliary emission controls');
    expect(subsystemOf('P0505')).toBe('Vehicle speed, idle control and auxiliary inputs');
    expect(subsystemOf('P0606')).toBe('Computer and auxiliary outputs');
    expect(subsystemOf('P0700')).toBe('Transmission');
    expect(subsystemOf('P0A80')).toBe('Hybrid propulsion');
    expect(subsystemOf('P2502')).toBe('Auxiliary inputs');
    expect(subsystemOf('P2300')).toBe('Ignition system or misfire');
    expect(dtcInfo('U0100')).toMatchObject({ system: 'network', subsystem: 'Network communication' });
    expect(subsystemOf('U0001')).toBe('Network electrical');
    expect(subsystemOf('U0401')).toBe('Network data');
    expect(dtcInfo('C0035')).toMatchObject({ system: 'chassis', make: 'generic' });
    expect(dtcInfo('B0001')).toMatchObject({ system: 'body', description: 'Driver Frontal Stage 1 Deployment Control' });
  });

  it('tells generic (SAE) ranges from manufacturer-controlled ones', () => {
    expect(['P0300', 'P2135', 'P3400', 'B0001', 'C3000', 'U0100', 'U3000'].every(isGeneric)).toBe(true);
    expect(['P1000', 'P3000', 'P33FF', 'B1318', 'B2000', 'C1234', 'U1000', 'U2100'].some(isGeneric)).toBe(false);
  });

  it('describes codes from the shipped table and says when a code is not in it', () => {
    expect(Object.keys(GENERIC_DESCRIPTIONS).length).toBeGreaterThan(800);
    expect(dtcInfo('p0171')).toMatchObject({ number: 'P0171', description: 'System Too Lean (Bank 1)' });
    expect(dtcInfo('P0420')!.description).toBe('Catalyst System Efficiency Below Threshold (Bank 1)');
    expect(dtcInfo('U0100')!.description).toBe('Lost Communication With ECM/PCM "A"');
    expect(dtcInfo('P0FFF')).toMatchObject({ make: 'generic', description: 'P0FFF: a generic (SAE) code not in drivewire\'s description table' });
    expect(dtcInfo('P1456')).toMatchObject({ make: 'manufacturer', subsystem: 'Auxiliary emission controls' });
    expect(dtcInfo('P1456')!.description).toMatch(/manufacturer-specific/);
    expect(dtcInfo('P010')).toBeNull();
    expect(Object.keys(GENERIC_DESCRIPTIONS).every((n) => dtcInfo(n)!.make === 'generic')).toBe(true);
  });
});

describe('battery status', () => {
  it('classifies resting, cranking and charging voltages against the published thresholds', () => {
    expect([12.6, 12.4, 12.2, 12.0, 11.6].map((volts) => classify({ kind: 'rest', volts }))).toEqual(['green', 'green', 'yellow', 'yellow', 'red']);
    expect([10.5, 10.0, 9.8, 9.6, 9.1].map((volts) => classify({ kind: 'crank', volts }))).toEqual(['green', 'green', 'yellow', 'yellow', 'red']);
    expect([14.2, 13.0, 12.8, 15.3, 12.2, 16].map((volts) => classify({ kind: 'charging', volts }))).toEqual(['green', 'green', 'yellow', 'yellow', 'red', 'red']);
  });

  it('takes readings from startup, running and parked frames', () => {
    expect(batteryReadings({ kind: 'startup', data: { rpm: 800, controlModuleVoltage: 9.9 }, battery: { voltage: 12.5, crankingVoltage: 9.8 } }))
      .toEqual([{ kind: 'crank', volts: 9.8 }, { kind: 'rest', volts: 12.5 }]);
    expect(batteryReadings({ kind: 'startup', data: { controlModuleVoltage: 9.9 }, battery: null })).toEqual([{ kind: 'crank', volts: 9.9 }]);
    expect(batteryReadings({ kind: 'telemetry', data: { rpm: 2000, controlModuleVoltage: 14.1 }, battery: null })).toEqual([{ kind: 'charging', volts: 14.1 }]);
    expect(batteryReadings({ kind: 'telemetry', data: { rpm: 0, controlModuleVoltage: 12.5 }, battery: null })).toEqual([{ kind: 'rest', volts: 12.5 }]);
    expect(batteryReadings({ kind: 'telemetry', data: { controlModuleVoltage: 12.5 }, battery: null })).toEqual([]);
  });

  it('gives the worst recent reading, and null when none is recent', () => {
    const now = new Date('2026-01-02T00:00:00Z');
    const at = (h: number) => new Date(now.getTime() - h * 3_600_000);
    const readings = [{ kind: 'rest' as const, volts: 12.2, ts: at(2) }, { kind: 'crank' as const, volts: 10.2, ts: at(2) },
      { kind: 'charging' as const, volts: 14, ts: at(1) }];
    expect(batteryStatus(readings, now, 72 * 3_600_000)).toEqual({ status: 'yellow', timestamp: at(2) });
    expect(batteryStatus(readings, now, 3_600_000)).toEqual({ status: 'green', timestamp: at(1) });
    expect(batteryStatus(readings, now, 1000)).toEqual({ status: null, timestamp: null });
  });
});
