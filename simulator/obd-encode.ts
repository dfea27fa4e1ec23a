// Mode 01 data bytes for the values the simulator sends: the inverse of the SAE J1979 formulas.
// Values outside what the bytes can hold are clamped, not wrapped.

export interface ObdValues {
  /** rpm */ rpm: number;
  /** km/h */ vehicleSpeed: number;
  /** % */ calculatedLoadValue: number;
  /** % */ absoluteThrottleSensorPosition: number;
  /** g/s */ massAirFlow: number;
  /** kPa absolute */ intakeManifoldPressure: number;
  /** °C */ coolantTemp: number;
  /** % */ shortTermFuelTrimBank1: number;
  /** % */ longTermFuelTrimBank1: number;
  /** V */ controlModuleVoltage: number;
  /** L/h */ engineFuelRate: number;
  /** s */ runTimeSinceEngineStart: number;
}

interface PidEncoder {
  key: keyof ObdValues;
  bytes: 1 | 2;
  /** Engineering value → the raw unsigned integer the bytes hold. */
  raw: (value: number) => number;
}

/** Keyed by PID (uppercase hex), in the order frames list them. */
export const PID_ENCODERS: Record<string, PidEncoder> = {
  '0C': { key: 'rpm', bytes: 2, raw: (v) => v * 4 }, // rpm = (256A+B)/4
  '0D': { key: 'vehicleSpeed', bytes: 1, raw: (v) => v }, // km/h = A
  '04': { key: 'calculatedLoadValue', bytes: 1, raw: (v) => (v * 255) / 100 }, // % = A·100/255
  '10': { key: 'massAirFlow', bytes: 2, raw: (v) => v * 100 }, // g/s = (256A+B)/100
  '05': { key: 'coolantTemp', bytes: 1, raw: (v) => v + 40 }, // °C = A − 40
  '11': { key: 'absoluteThrottleSensorPosition', bytes: 1, raw: (v) => (v * 255) / 100 }, // % = A·100/255
  '0B': { key: 'intakeManifoldPressure', bytes: 1, raw: (v) => v }, // kPa = A
  '06': { key: 'shortTermFuelTrimBank1', bytes: 1, raw: (v) => (v * 128) / 100 + 128 }, // % = (A−128)·100/128
  '07': { key: 'longTermFuelTrimBank1', bytes: 1, raw: (v) => (v * 128) / 100 + 128 },
  '42': { key: 'controlModuleVoltage', bytes: 2, raw: (v) => v * 1000 }, // V = (256A+B)/1000
  '5E': { key: 'engineFuelRate', bytes: 2, raw: (v) => v * 20 }, // L/h = (256A+B)/20
  '1F': { key: 'runTimeSinceEngineStart', bytes: 2, raw: (v) => v }, // s = 256A+B
};

/** Hex data bytes (uppercase, no spaces) for one PID, e.g. encodePid('0C', 1726) → "1AF8". */
export function encodePid(pid: string, value: number): string {
  const encoder = PID_ENCODERS[pid.toUpperCase()];
  if (!encoder) throw new RangeError(`no encoder for PID ${pid}`);
  const max = encoder.bytes === 1 ? 0xff : 0xffff;
  const raw = Math.min(max, Math.max(0, Math.round(encoder.raw(value))));
  return raw.toString(16).toUpperCase().padStart(encoder.bytes * 2, '0');
}

/** Every PID of PID_ENCODERS encoded from the values. */
export function encodePids(values: ObdValues): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [pid, encoder] of Object.entries(PID_ENCODERS)) out[pid] = encodePid(pid, values[encoder.key]);
  return out;
}
