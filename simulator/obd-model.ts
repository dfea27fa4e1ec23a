// Engine and sensor values consistent with the motion: road load → power → fuel → air (14.7:1)
// → load, MAP, throttle; gear and rpm from speed; warm-up, fuel trims and charging voltage.
import type { ObdValues } from './obd-encode.js';
import { createRng } from './prng.js';
import type { Scenario } from './scenarios.js';

export const VEHICLE = {
  massKg: 1500,
  rollingResistance: 0.012,
  /** m², drag coefficient × frontal area. */ dragArea: 0.7,
  /** kg/m³ */ airDensity: 1.2,
  /** m */ wheelRadius: 0.31,
  /** 5-speed automatic and final drive. */ gearRatios: [3.55, 2.06, 1.4, 1.0, 0.73],
  finalDrive: 3.94,
  /** km/h at which 1→2, 2→3, 3→4, 4→5 shift when cruising; later when accelerating. */
  upshiftKmh: [18, 32, 48, 64],
  idleRpm: 750,
  /** L, for the air the engine can breathe at full load. */ displacement: 1.8,
  volumetricEfficiency: 0.9,
  /** Brake thermal efficiency for the power above friction. */ efficiency: 0.24,
  drivetrainEfficiency: 0.9,
  /** L/h at idle; friction fuel grows with rpm^0.6. */ idleFuelLh: 0.8,
  /** g/L, gasoline. */ fuelDensity: 745,
  /** J/g, gasoline lower heating value. */ fuelLhv: 43000,
  stoichiometric: 14.7,
  /** °C */ warmCoolant: 90,
  /** s, warm-up time constant: ~90 °C after ~8 minutes. */ warmUpTau: 160,
};

const G = 9.80665;

export interface ObdInput {
  /** ms since engine start (the startup frame is t = 0). */ t: number;
  /** km/h */ speed: number;
  /** m/s², longitudinal at this instant. */ accel: number;
  /** m/s², extremes since the previous reading (default: accel). */ accelMin?: number;
  accelMax?: number;
}

/** Accelerometer window in m/s²: x forward, y left, z up (gravity ≈ +9.81 on z). */
export interface AccelWindow { maxX: number; maxY: number; maxZ: number; minX: number; minY: number; minZ: number }

export interface Battery { /** V resting before cranking */ voltage: number; /** V lowest while cranking */ crankingVoltage: number }

export interface ObdModelOptions {
  seed?: number;
  scenarios?: readonly Scenario[];
  /** °C, coolant starts here. */ ambientC?: number;
}

export interface ObdModel {
  read(input: ObdInput): { values: ObdValues; accel: AccelWindow };
  battery: Battery;
}

export function createObdModel(opts: ObdModelOptions = {}): ObdModel {
  const rng = createRng(opts.seed ?? 1);
  const ambient = opts.ambientC ?? 20;
  const weak = opts.scenarios?.includes('weak-battery') ?? false;
  const battery: Battery = weak
    ? { voltage: round(12.0 + rng.noise(0.05), 2), crankingVoltage: round(5.5 + rng.noise(0.1), 2) }
    : { voltage: round(12.6 + rng.noise(0.05), 2), crankingVoltage: round(10.4 + rng.noise(0.1), 2) }; // green: crank ≥ 10.0 V
  let longTrim = rng.uniform(-3, 3);

  const read = (input: ObdInput) => {
    const seconds = input.t / 1000;
    const rpm = engineRpm(input.speed, input.accel) + rng.noise(input.speed < 1 ? 10 : 20);
    const fuelLh = fuelRate(input.speed, input.accel, rpm);
    const maf = (fuelLh * VEHICLE.fuelDensity * VEHICLE.stoichiometric) / 3600;
    const load = clamp((100 * maf) / peakAirflow(rpm), 10, 100);
    longTrim = clamp(longTrim + rng.noise(0.05), -5, 5);
    const values: ObdValues = {
      rpm: Math.round(rpm),
      vehicleSpeed: Math.round(input.speed),
      calculatedLoadValue: round(load, 1),
      absoluteThrottleSensorPosition: round(throttle(load), 1),
      massAirFlow: round(maf, 2),
      intakeManifoldPressure: Math.round(12 + 0.86 * load),
      coolantTemp: round(coolant(seconds, ambient) + rng.noise(0.3), 1),
      shortTermFuelTrimBank1: round(clamp(rng.noise(2), -8, 8), 1),
      longTermFuelTrimBank1: round(longTrim, 1),
      controlModuleVoltage: round(moduleVoltage(seconds, battery) + rng.noise(0.03), 2),
      engineFuelRate: round(fuelLh, 2),
      runTimeSinceEngineStart: Math.floor(seconds),
    };
    return { values, accel: accelWindow(input, rng) };
  };
  return { read, battery };
}

/** 1-based gear for a speed; shifts later when accelerating hard. */
export function gearFor(speedKmh: number, accel: number): number {
  const later = 1 + 0.3 * clamp(accel / 2, 0, 1);
  let gear = 1;
  for (const at of VEHICLE.upshiftKmh) if (speedKmh >= at * later) gear++;
  return gear;
}

/** rpm without noise: geared from wheel speed, never under idle; converter slip when pulling away. */
export function engineRpm(speedKmh: number, accel: number): number {
  if (speedKmh < 1) return VEHICLE.idleRpm;
  const wheelRpm = (speedKmh / 3.6 / (2 * Math.PI * VEHICLE.wheelRadius)) * 60;
  const geared = wheelRpm * VEHICLE.gearRatios[gearFor(speedKmh, accel) - 1] * VEHICLE.finalDrive;
  const slip = accel > 0.3 ? 500 * Math.min(1, accel / 2) : 0;
  return Math.min(6500, Math.max(VEHICLE.idleRpm + slip, geared));
}

/** W at the wheels: inertia + rolling + aerodynamic drag (negative when coasting or braking). */
export function wheelPower(speedKmh: number, accel: number): number {
  const v = speedKmh / 3.6;
  const force = VEHICLE.massKg * (accel + G * VEHICLE.rollingResistance) + 0.5 * VEHICLE.airDensity * VEHICLE.dragArea * v * v;
  return v > 0 ? force * v : 0;
}

/** L/h: friction fuel growing with rpm plus the fuel for positive wheel power. */
export function fuelRate(speedKmh: number, accel: number, rpm: number): number {
  const friction = VEHICLE.idleFuelLh * (rpm / VEHICLE.idleRpm) ** 0.6;
  const engineW = Math.max(0, wheelPower(speedKmh, accel)) / VEHICLE.drivetrainEfficiency;
  const gramsPerS = engineW / (VEHICLE.efficiency * VEHICLE.fuelLhv);
  return friction + (gramsPerS * 3600) / VEHICLE.fuelDensity;
}

/** g/s of air at full load for an rpm (4-stroke: one intake per two revolutions). */
function peakAirflow(rpm: number): number {
  const airGramsPerL = 1.19;
  return ((VEHICLE.displacement * rpm) / 2 / 60) * airGramsPerL * VEHICLE.volumetricEfficiency;
}

/** % absolute throttle: ~14 closed, ~84 wide open. */
function throttle(load: number): number {
  return load <= 20 ? 14 : 14 + 70 * ((load - 20) / 80) ** 1.3;
}

function coolant(seconds: number, ambient: number): number {
  return ambient + (VEHICLE.warmCoolant - ambient) * (1 - Math.exp(-seconds / VEHICLE.warmUpTau));
}

/** V: cranking dip at t = 0, alternator recovery over ~3 s, then charging at ~14.2. */
function moduleVoltage(seconds: number, battery: Battery): number {
  if (seconds <= 0) return battery.crankingVoltage;
  if (seconds < 3) return 13.2 + (seconds / 3) * 1.0;
  return 14.2;
}

function accelWindow(input: ObdInput, rng: ReturnType<typeof createRng>): AccelWindow {
  const n = () => Math.abs(rng.noise(0.05));
  const min = input.accelMin ?? input.accel;
  const max = input.accelMax ?? input.accel;
  return {
    maxX: round(max + n(), 3), minX: round(min - n(), 3),
    maxY: round(n() * 2, 3), minY: round(-n() * 2, 3),
    maxZ: round(G + n(), 3), minZ: round(G - n(), 3),
  };
}

const clamp = (v: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, v));
const round = (v: number, digits: number) => Math.round(v * 10 ** digits) / 10 ** digits;
