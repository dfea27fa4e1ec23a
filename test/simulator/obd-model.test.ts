import { describe, expect, it } from 'vitest';
import { planDrive } from '../../simulator/motion.js';
import { encodePid, encodePids, PID_ENCODERS, type ObdValues } from '../../simulator/obd-encode.js';
import { createObdModel, engineRpm, gearFor, VEHICLE } from '../../simulator/obd-model.js';
import { loadStoredRoutes } from '../../simulator/route.js';

// SAE J1979 mode 01 formulas, written out here independently of the encoder.
const bytes = (hex: string) => hex.match(/../g)!.map((b) => parseInt(b, 16));
const word = (hex: string) => { const [a, b] = bytes(hex); return 256 * a + b; };
const DECODE: Record<string, (hex: string) => number> = {
  '0C': (h) => word(h) / 4,
  '0D': (h) => bytes(h)[0],
  '04': (h) => (bytes(h)[0] * 100) / 255,
  '05': (h) => bytes(h)[0] - 40,
  '06': (h) => ((bytes(h)[0] - 128) * 100) / 128,
  '07': (h) => ((bytes(h)[0] - 128) * 100) / 128,
  '0B': (h) => bytes(h)[0],
  '10': (h) => word(h) / 100,
  '11': (h) => (bytes(h)[0] * 100) / 255,
  '42': (h) => word(h) / 1000,
  '5E': (h) => word(h) / 20,
  '1F': (h) => word(h),
};
/** Half a step of each PID's resolution: the most rounding can move a value. */
const HALF_STEP: Record<string, number> = {
  '0C': 0.125, '0D': 0.5, '04': 100 / 255 / 2, '05': 0.5, '06': 100 / 128 / 2, '07': 100 / 128 / 2,
  '0B': 0.5, '10': 0.005, '11': 100 / 255 / 2, '42': 0.0005, '5E': 0.025, '1F': 0.5,
};
const SAMPLES: Record<string, number[]> = {
  '0C': [0, 750, 1726, 6500.25], '0D': [0, 33, 129], '04': [0, 20.2, 67.3, 100], '05': [-40, 20, 89.6, 215],
  '06': [-8, -0.4, 0, 5.1], '07': [-3.3, 0, 2.9], '0B': [29, 101], '10': [2.43, 44.98, 655.35], '11': [14, 49.3, 84],
  '42': [5.5, 9.8, 14.2], '5E': [0.8, 2.27, 14.79], '1F': [0, 59, 1616],
};

describe('obd-encode', () => {
  it.each(Object.keys(PID_ENCODERS))('PID %s round-trips through the J1979 formula within half a step', (pid) => {
    for (const value of SAMPLES[pid]) {
      const hex = encodePid(pid, value);
      expect(hex).toMatch(new RegExp(`^[0-9A-F]{${PID_ENCODERS[pid].bytes * 2}}$`));
      expect(Math.abs(DECODE[pid](hex) - value)).toBeLessThanOrEqual(HALF_STEP[pid] + 1e-9);
    }
  });

  it('encodes the documented example: 1726 rpm → "1AF8", 60 km/h → "3C"', () => {
    expect(encodePid('0C', 1726)).toBe('1AF8');
    expect(encodePid('0D', 60)).toBe('3C');
  });

  it('clamps values the bytes cannot hold instead of wrapping', () => {
    expect(encodePid('0D', 300)).toBe('FF');
    expect(encodePid('05', -60)).toBe('00');
    expect(encodePid('0C', 20000)).toBe('FFFF');
  });

  it('agrees with the gateway decoder (gateway/obd.decoder.ts) on every PID', async () => {
    const { decodePids } = await import('../../gateway/obd.decoder.js');
    const values = createObdModel({ seed: 3 }).read({ t: 90_000, speed: 47, accel: 0.8 }).values;
    const { data, errors } = decodePids(encodePids(values));
    expect(errors).toEqual([]);
    for (const [pid, { key }] of Object.entries(PID_ENCODERS)) {
      expect(Math.abs((data[key] as number) - values[key])).toBeLessThanOrEqual(HALF_STEP[pid] + 1e-9);
    }
  });
});

describe('obd-model', () => {
  const read = (t: number, speed: number, accel = 0, seed = 1) => createObdModel({ seed }).read({ t, speed, accel }).values;

  it('idles at 750 ± 50 rpm when stopped', () => {
    const model = createObdModel({ seed: 9 });
    for (let t = 0; t < 60_000; t += 1000) {
      const { rpm, vehicleSpeed } = model.read({ t, speed: 0, accel: 0 }).values;
      expect(vehicleSpeed).toBe(0);
      expect(Math.abs(rpm - 750)).toBeLessThanOrEqual(50);
    }
  });

  it('picks gears by speed and shifts later when accelerating', () => {
    expect(gearFor(10, 0)).toBe(1);
    expect(gearFor(40, 0)).toBe(3);
    expect(gearFor(100, 0)).toBe(5);
    expect(gearFor(20, 2)).toBe(1);
    // 50 km/h cruising in 4th: wheel rpm × 1.00 × 3.94
    const expected = (50 / 3.6 / (2 * Math.PI * VEHICLE.wheelRadius)) * 60 * 3.94;
    expect(engineRpm(50, 0)).toBeCloseTo(expected, 6);
    expect(engineRpm(50, 0)).toBeGreaterThan(1500);
    expect(engineRpm(50, 0)).toBeLessThan(1900);
  });

  it('warms the coolant from ~20 °C to ≥ 85 °C by 8 minutes and holds ~90 °C', () => {
    expect(read(0, 0).coolantTemp).toBeCloseTo(20, 0);
    expect(read(120_000, 40).coolantTemp).toBeGreaterThan(50);
    expect(read(120_000, 40).coolantTemp).toBeLessThan(65);
    expect(read(480_000, 40).coolantTemp).toBeGreaterThanOrEqual(85);
    expect(Math.abs(read(1_200_000, 40).coolantTemp - 90)).toBeLessThanOrEqual(1.5);
  });

  it('dips to ~10.4 V while cranking (a healthy battery: green), then charges at ~14.2 V', () => {
    const model = createObdModel({ seed: 4 });
    expect(model.battery.crankingVoltage).toBeGreaterThanOrEqual(10);
    expect(model.battery.crankingVoltage).toBeLessThan(10.8);
    expect(model.battery.voltage).toBeCloseTo(12.6, 0);
    expect(model.read({ t: 0, speed: 0, accel: 0 }).values.controlModuleVoltage).toBeCloseTo(model.battery.crankingVoltage, 0);
    expect(Math.abs(model.read({ t: 10_000, speed: 0, accel: 0 }).values.controlModuleVoltage - 14.2)).toBeLessThan(0.15);
  });

  it('weak-battery cranks much deeper, to ~5.5 V', () => {
    const model = createObdModel({ seed: 4, scenarios: ['weak-battery'] });
    expect(Math.abs(model.battery.crankingVoltage - 5.5)).toBeLessThan(0.4);
    expect(model.read({ t: 0, speed: 0, accel: 0 }).values.controlModuleVoltage).toBeLessThan(6);
  });

  it('keeps air and fuel stoichiometric (MAF = fuel × 14.7) and load rising with acceleration', () => {
    const cruise = read(60_000, 50, 0);
    const pulling = read(60_000, 50, 2);
    for (const v of [cruise, pulling]) {
      const fuelGs = (v.engineFuelRate * VEHICLE.fuelDensity) / 3600;
      expect(v.massAirFlow / fuelGs).toBeCloseTo(14.7, 0);
    }
    expect(pulling.calculatedLoadValue).toBeGreaterThan(cruise.calculatedLoadValue + 30);
    expect(pulling.absoluteThrottleSensorPosition).toBeGreaterThan(cruise.absoluteThrottleSensorPosition);
    expect(pulling.intakeManifoldPressure).toBeGreaterThan(cruise.intakeManifoldPressure);
  });

  it('uses 6–10 L/100 km over a town drive (DFW - Downtown Route 1)', async () => {
    const route = (await loadStoredRoutes()).find((r) => r.name === 'DFW - Downtown Route 1')!;
    const plan = planDrive(route);
    const model = createObdModel({ seed: 2 });
    let liters = 0;
    plan.samples.forEach((s, i) => {
      const { engineFuelRate } = model.read(s).values;
      if (i > 0) liters += (engineFuelRate * (s.t - plan.samples[i - 1].t)) / 3_600_000;
    });
    const per100 = (liters / (plan.lengthM / 1000)) * 100;
    expect(per100).toBeGreaterThanOrEqual(6);
    expect(per100).toBeLessThanOrEqual(10);
  });

  it('keeps fuel trims within ±8 % and the accelerometer on gravity (z ≈ 9.81 m/s²)', () => {
    const model = createObdModel({ seed: 5 });
    for (let t = 0; t < 300_000; t += 1000) {
      const { values, accel } = model.read({ t, speed: 30, accel: 0.5, accelMin: 0, accelMax: 0.5 });
      expect(Math.abs(values.shortTermFuelTrimBank1)).toBeLessThanOrEqual(8);
      expect(Math.abs(values.longTermFuelTrimBank1)).toBeLessThanOrEqual(5);
      expect(accel.maxZ).toBeGreaterThanOrEqual(9.80665);
      expect(accel.minZ).toBeLessThanOrEqual(9.80665);
      expect(accel.maxZ - accel.minZ).toBeLessThan(0.5);
      expect(accel.maxX).toBeGreaterThanOrEqual(0.5);
      expect(accel.minX).toBeLessThanOrEqual(0);
    }
  });

  it('is repeatable for a seed and differs between seeds', () => {
    const run = (seed: number) => {
      const model = createObdModel({ seed });
      return [0, 1000, 2000, 3000].map((t) => model.read({ t, speed: 20, accel: 1 }));
    };
    expect(run(11)).toEqual(run(11));
    expect(run(11)).not.toEqual(run(12));
  });

  it('sends every value the frame lists, as the catalog keys', () => {
    const keys: (keyof ObdValues)[] = Object.values(PID_ENCODERS).map((e) => e.key);
    expect(Object.keys(read(1000, 10)).sort()).toEqual([...keys].sort());
  });
});
