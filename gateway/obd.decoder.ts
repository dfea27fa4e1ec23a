// SAE J1979 decoding: service 01 PIDs (table in obd.pids.ts), service 09 PID 02 (VIN) and
// service 03 (stored DTCs). Pure functions; every failure is a reason string, never a throw.
import { preview } from '../lib/json-bounds.js';
import { MODE01_PIDS } from './obd.pids.js';

export { MODE01_PIDS, type PidEntry } from './obd.pids.js';

/** Parses hex data bytes ("1A F8", "1af8", "1A\nF8"); a reason string when it is not hex bytes. */
export function parseHexBytes(text: string): number[] | string {
  // one pass over the characters (a regex, a replace and a parseInt per byte cost several passes, on every frame)
  const out: number[] = [];
  let high = -1;
  let digits = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const v = hexValue(c);
    if (v < 0) {
      if (isSpace(c)) continue;
      return 'is not hex';
    }
    digits++;
    if (high < 0) high = v;
    else { out.push(high * 16 + v); high = -1; }
  }
  return high < 0 ? out : `has an odd number of hex digits (${digits})`;
}

/** The value of a hex digit's character code, -1 for any other character. */
function hexValue(c: number): number {
  if (c >= 48 && c <= 57) return c - 48; // 0-9
  if (c >= 65 && c <= 70) return c - 55; // A-F
  if (c >= 97 && c <= 102) return c - 87; // a-f
  return -1;
}

/** What `\s` matches (ECMAScript WhiteSpace and LineTerminator). */
const isSpace = (c: number) => (c >= 9 && c <= 13) || c === 32 || c === 160 || c === 0x1680 || (c >= 0x2000 && c <= 0x200a)
  || c === 0x2028 || c === 0x2029 || c === 0x202f || c === 0x205f || c === 0x3000 || c === 0xfeff;

/** A PID key as exactly 2 hex digits, upper-cased; null when it is not one. */
function pidKey(raw: string): string | null {
  if (raw.length !== 2) return null;
  const c0 = raw.charCodeAt(0);
  const c1 = raw.charCodeAt(1);
  if (hexValue(c0) < 0 || hexValue(c1) < 0) return null;
  return c0 >= 97 || c1 >= 97 ? raw.toUpperCase() : raw; // a-f
}

/**
 * Decodes service 01 responses. Keys are the PID as exactly 2 hex digits (case-insensitive, no
 * "01"/"41" service prefix); values are the PID's data bytes in hex, whitespace allowed, without
 * the "41 <PID>" response header. Supported-PID bitmaps other than 20 decode to nothing.
 */
export function decodePids(pids: Record<string, unknown>): { data: Record<string, unknown>; errors: string[] } {
  const data: Record<string, unknown> = {};
  const errors: string[] = [];
  for (const rawPid in pids) {
    const value = pids[rawPid];
    const pid = pidKey(rawPid);
    if (pid === null) {
      errors.push(`PID ${rawPid}: not a PID (expected 2 hex digits, without the service byte)`);
      continue;
    }
    const entry = MODE01_PIDS[pid];
    if (!entry) {
      errors.push(`PID ${pid}: not a supported service 01 PID`);
      continue;
    }
    if (typeof value !== 'string') {
      errors.push(`PID ${pid}: data must be a hex string`);
      continue;
    }
    const bytes = parseHexBytes(value);
    if (typeof bytes === 'string') {
      errors.push(`PID ${pid}: data ${JSON.stringify(value.slice(0, 40))} ${bytes}`);
      continue;
    }
    if (bytes.length !== entry.bytes) {
      errors.push(`PID ${pid}: expected ${entry.bytes} data byte${entry.bytes === 1 ? '' : 's'}, got ${bytes.length}`);
      continue;
    }
    try {
      if (entry.value) data[entry.keys[0]] = entry.value(bytes);
      else Object.assign(data, entry.decode(bytes));
    } catch (err) {
      errors.push(`PID ${pid}: ${(err as Error).message}`);
    }
  }
  return { data, errors };
}

const VIN_RE = /^[A-HJ-NPR-Z0-9]{17}$/;

/** Why `vin` is not a well-formed VIN (17 characters, digits and capitals except I, O, Q), or null. */
export function vinProblem(vin: string): string | null {
  if (vin.length !== 17) return `VIN must have 17 characters, got ${vin.length}`;
  if (VIN_RE.test(vin)) return null;
  const bad = [...vin].find((ch) => !/[A-HJ-NPR-Z0-9]/.test(ch)) as string;
  return /[IOQ]/.test(bad)
    ? `VIN contains "${bad}" (I, O and Q are not used in VINs)`
    : `VIN contains an invalid character ${JSON.stringify(bad)}`;
}

const hexByte = (v: number) => v.toString(16).toUpperCase().padStart(2, '0');

/** Data bytes of a service 09 PID 02 response, with headers and frame counters removed. */
function vinBytes(raw: string): number[] | string {
  // ELM327 CAN formatting: a byte-count line ("014") and "0:", "1:" line prefixes.
  const lines = raw.split(/[\r\n]+/).map((l) => l.trim()).filter((l) => l && !/^[0-9A-F]{3}$/i.test(l));
  const bytes = parseHexBytes(lines.map((l) => l.replace(/^[0-9A-F]:/i, '')).join(''));
  if (bytes === 'is not hex') return 'VIN is neither 17 characters nor hex';
  if (typeof bytes === 'string') return `VIN hex ${bytes}`;
  if (bytes[0] !== 0x49 || bytes[1] !== 0x02) return bytes;
  // Each message starts "49 02 <n>": n counts messages from 1 on older protocols and is the
  // number of data items (01) on CAN. 0x49 ('I') never occurs in a VIN, so it marks a header.
  const data: number[] = [];
  let n = 0;
  for (let i = 0; i < bytes.length; i++) {
    if (bytes[i] !== 0x49) { data.push(bytes[i]); continue; }
    if (bytes[i + 1] !== 0x02 || bytes[i + 2] !== ++n) return `VIN hex has a malformed "49 02 ${hexByte(n)}" message header`;
    i += 2;
  }
  return data;
}

/**
 * Decodes a VIN given plainly ("1HGCM82633A004352") or as a raw service 09 PID 02 response in
 * hex: with or without the "49 02 0n" headers, single- or multi-message, spaces and newlines
 * allowed. Leading 00 padding bytes are dropped.
 */
export function decodeVin(raw: string): { vin: string } | { error: string } {
  const text = raw.trim();
  const plain = /^[A-Z0-9]+$/i.test(text) && (text.length === 17 || !/^[0-9A-F]+$/i.test(text));
  if (plain) {
    const vin = text.toUpperCase();
    const problem = vinProblem(vin);
    return problem ? { error: problem } : { vin };
  }
  const bytes = vinBytes(text);
  if (typeof bytes === 'string') return { error: bytes };
  const first = bytes.findIndex((b) => b !== 0);
  const chars = first < 0 ? [] : bytes.slice(first);
  if (chars.some((b) => b < 0x20 || b > 0x7e)) return { error: 'VIN hex contains non-printable bytes' };
  const vin = String.fromCharCode(...chars);
  const problem = vinProblem(vin);
  return problem ? { error: problem } : { vin };
}

const LETTERS = 'ABCDEFGHJKLMNPRSTUVWXYZ';
const LETTER_VALUES = '12345678123457923456789';
const WEIGHTS = [8, 7, 6, 5, 4, 3, 2, 10, 0, 9, 8, 7, 6, 5, 4, 3, 2];

/**
 * ISO 3779 / 49 CFR 565 check digit (position 9). Only North American VINs are required to carry
 * one, so this is informative: a VIN is never refused for failing it.
 */
export function isValidVinCheckDigit(vin: string): boolean {
  if (!VIN_RE.test(vin)) return false;
  let sum = 0;
  for (let i = 0; i < 17; i++) {
    const ch = vin[i];
    const value = /[0-9]/.test(ch) ? Number(ch) : Number(LETTER_VALUES[LETTERS.indexOf(ch)]);
    sum += value * WEIGHTS[i];
  }
  const check = sum % 11;
  return vin[8] === (check === 10 ? 'X' : String(check));
}

const DTC_RE = /^[PCBU][0-3][0-9A-F]{3}$/;
const DTC_SYSTEM = 'PCBU';

/** Formats one 2-byte service 03 DTC: A bits 7–6 system, bits 5–4 first digit, rest hex. */
export function dtcFromBytes(a: number, b: number): string {
  const rest = (((a & 0x0f) << 8) | b).toString(16).toUpperCase().padStart(3, '0');
  return `${DTC_SYSTEM[a >> 6]}${(a >> 4) & 3}${rest}`;
}

/**
 * Stored DTCs, from a list of codes ("P0100") or a raw service 03 response in hex: the data
 * bytes only (no "43" service byte or CAN count byte), two bytes per code, 0000 padding ignored.
 * Duplicates are dropped; order is kept.
 */
export function decodeDtcs(raw: string | readonly unknown[]): { codes: string[]; errors: string[] } {
  const codes: string[] = [];
  const errors: string[] = [];
  const add = (code: string) => { if (!codes.includes(code)) codes.push(code); };
  if (Array.isArray(raw)) {
    raw.forEach((item, i) => {
      const code = typeof item === 'string' ? item.trim().toUpperCase() : '';
      if (DTC_RE.test(code)) add(code);
      else errors.push(`dtcs[${i}] ${preview(item, 40)} is not a DTC like P0100`);
    });
  } else if (typeof raw === 'string') {
    const bytes = parseHexBytes(raw);
    if (bytes === 'is not hex') errors.push('dtcs is a string but not hex; send codes like "P0100" as an array');
    else if (typeof bytes === 'string') errors.push(`dtcs hex ${bytes}`);
    else if (bytes.length % 2 !== 0) errors.push(`dtcs hex has an odd number of bytes (${bytes.length}); each code is 2 bytes`);
    else for (let i = 0; i < bytes.length; i += 2) if (bytes[i] || bytes[i + 1]) add(dtcFromBytes(bytes[i], bytes[i + 1]));
  } else {
    errors.push('dtcs must be an array of codes or a hex string');
  }
  return { codes, errors };
}
