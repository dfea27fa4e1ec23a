// Trouble-code information (the single-code record): make, system and subsystem follow from the
// code's structure (SAE J2012 / ISO 15031-6); the description comes from the generic table shipped in
// dtc-codes.json. Pure functions; the stage stores what they give in dtc_codes.
import fs from 'node:fs';

export interface DtcInfo {
  number: string;
  description: string;
  /** `generic` for SAE-controlled codes, `manufacturer` for manufacturer-controlled ranges. */
  make: 'generic' | 'manufacturer';
  system: 'powertrain' | 'chassis' | 'body' | 'network';
  subsystem: string;
}

export const DTC_NUMBER = /^[PCBU][0-3][0-9A-F]{3}$/;

const TABLE: Record<string, string> = JSON.parse(
  fs.readFileSync(new URL('./dtc-codes.json', import.meta.url), 'utf8'),
).codes;

/** The generic descriptions, keyed by code (read-only). */
export const GENERIC_DESCRIPTIONS: Readonly<Record<string, string>> = TABLE;

const SYSTEMS = { P: 'powertrain', C: 'chassis', B: 'body', U: 'network' } as const;

/** SAE J2012 powertrain areas by the code's 3rd character (P0xxx, and P1xxx by the same convention). */
const P0_AREAS: Record<string, string> = {
  0: 'Fuel and air metering and auxiliary emission controls',
  1: 'Fuel and air metering',
  2: 'Fuel and air metering (injector circuit)',
  3: 'Ignition system or misfire',
  4: 'Auxiliary emission controls',
  5: 'Vehicle speed, idle control and auxiliary inputs',
  6: 'Computer and auxiliary outputs',
  7: 'Transmission', 8: 'Transmission', 9: 'Transmission',
  A: 'Hybrid propulsion', B: 'Hybrid propulsion', C: 'Hybrid propulsion', D: 'Hybrid propulsion',
  E: 'Hybrid propulsion', F: 'Hybrid propulsion',
};
const P2_AREAS: Record<string, string> = {
  0: 'Fuel and air metering and auxiliary emission controls',
  1: 'Fuel and air metering and auxiliary emission controls',
  2: 'Fuel and air metering and auxiliary emission controls',
  3: 'Ignition system or misfire',
  4: 'Auxiliary emission controls',
  5: 'Auxiliary inputs',
  6: 'Computer and auxiliary outputs',
  7: 'Transmission', 8: 'Transmission', 9: 'Transmission',
  A: 'Fuel and air metering and auxiliary emission controls',
};
/** P3xxx: P30–P33 manufacturer-controlled, P34 cylinder deactivation, the rest reserved by SAE. */
const P3_AREAS: Record<string, string> = {
  0: 'Fuel and air metering and auxiliary emission controls', 1: 'Fuel and air metering and auxiliary emission controls',
  2: 'Fuel and air metering and auxiliary emission controls', 3: 'Ignition system or misfire',
  4: 'Cylinder deactivation',
};
/** U codes: J2012 network areas by the 3rd character. */
const U_AREAS: Record<string, string> = {
  0: 'Network electrical', 1: 'Network communication', 2: 'Network communication',
  3: 'Network software', 4: 'Network data', 5: 'Network data',
};

/** SAE-controlled (generic) ranges: P0, P2, P34–P39, B0, B3, C0, C3, U0, U3. */
export function isGeneric(number: string): boolean {
  const [sys, d1, d2] = number;
  if (d1 === '0') return true;
  if (d1 === '2') return sys === 'P';
  if (d1 === '3') return sys !== 'P' || Number.parseInt(d2, 16) >= 4;
  return false;
}

export function subsystemOf(number: string): string {
  const [sys, d1, d2] = number;
  if (sys === 'P') {
    const area = d1 === '2' ? P2_AREAS[d2] : d1 === '3' ? P3_AREAS[d2] : P0_AREAS[d2];
    return area ?? (d1 === '3' ? 'Reserved by SAE' : 'Powertrain');
  }
  if (sys === 'U') return U_AREAS[d2] ?? 'Network';
  const name = sys === 'C' ? 'Chassis' : 'Body';
  return isGeneric(number) ? name : `${name} (manufacturer-controlled)`;
}

/** Everything known about a code; `null` when it is not a code like P0100. */
export function dtcInfo(raw: string): DtcInfo | null {
  const number = raw.trim().toUpperCase();
  if (!DTC_NUMBER.test(number)) return null;
  const make = isGeneric(number) ? 'generic' : 'manufacturer';
  const description = TABLE[number]
    ?? (make === 'generic'
      ? `${number}: a generic (SAE) code not in drivewire's description table`
      : `${number}: a manufacturer-specific code; its description depends on the vehicle's make and is not in drivewire's generic table`);
  return { number, description, make, system: SYSTEMS[number[0] as keyof typeof SYSTEMS], subsystem: subsystemOf(number) };
}
