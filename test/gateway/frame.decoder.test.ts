import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../lib/config.js';
import { decodeFrame, decodePayload, type DecodedFrame, type RefusedFrame } from '../../gateway/frame.decoder.js';

const NOW = new Date('2024-06-01T12:00:00Z');
const TS = '2024-06-01T11:59:00Z';
const ACCEL = { maxX: -0.344767, maxY: -7.240103, maxZ: -5.707806, minX: -0.651226, minY: -7.27841, minZ: -7.316718 };
const buf = (v: unknown) => Buffer.from(JSON.stringify(v));
const decode = (v: unknown, opts = {}) => decodePayload(buf(v), { now: NOW, ...opts });

describe('decodePayload', () => {
  it('decodes a frame carrying every field', () => {
    const frame = {
      id: 'f-1', ts: TS, kind: 'telemetry',
      location: { lat: 32.782034, lon: -96.790123, alt: 150.5, speed: 16.2, heading: 270, hdop: 0.9, satellites: 9 },
      accel: ACCEL, pids: { '0C': '03AC', '0D': '10' }, data: { fuelLevelInput: 50.5, fuelType: 'Gasoline' },
      vin: '1HGCM82633A004352', dtcs: '0100 0300 0000', battery: { voltage: 12.6, crankingVoltage: 9.8, soc: 80 },
      collision: { peakG: 3.2, durationMs: 120 },
    };
    const expected: DecodedFrame = {
      frameId: 'f-1', ts: new Date(TS), kind: 'telemetry',
      data: {
        rpm: 235, vehicleSpeed: 16, fuelLevelInput: 50.5, fuelType: 'Gasoline',
        location: { type: 'Point', coordinates: [-96.790123, 32.782034] }, accel: ACCEL,
      },
      lat: 32.782034, lon: -96.790123, gps: { alt: 150.5, speed: 16.2, heading: 270, hdop: 0.9, satellites: 9 },
      vin: '1HGCM82633A004352', dtcs: ['P0100', 'P0300'],
      battery: { voltage: 12.6, crankingVoltage: 9.8, soc: 80 }, collision: { peakG: 3.2, durationMs: 120 },
    };
    expect(decode(frame)).toEqual({ frames: [expected], refused: [], payloadError: null });
  });

  it('decodes a minimal frame as telemetry with nothing else set', () => {
    expect(decode({ ts: TS }).frames).toEqual([{
      frameId: null, ts: new Date(TS), kind: 'telemetry', data: {}, lat: null, lon: null, gps: null,
      vin: null, dtcs: null, battery: null, collision: null,
    }]);
  });

  it('decodes an array payload in order, with numeric ids as strings and the given kinds', () => {
    const r = decode([{ id: 7, ts: TS, kind: 'startup', vin: '1HGCM82633A004352' }, { id: 8, ts: TS, kind: 'shutdown' },
      { id: 'x', ts: TS, kind: 'phone-home', location: { lat: 1, lon: 2 } }]);
    expect(r.refused).toEqual([]);
    expect(r.frames.map((f) => [f.frameId, f.kind])).toEqual([['7', 'startup'], ['8', 'shutdown'], ['x', 'phone-home']]);
    expect(r.frames[2]).toMatchObject({ lat: 1, lon: 2, gps: null, data: { location: { type: 'Point', coordinates: [2, 1] } } });
  });

  it('reads ts as ISO 8601 (Z or offset) and as epoch milliseconds (number or numeric string)', () => {
    const ms = Date.parse(TS);
    const r = decode([{ ts: TS }, { ts: '2024-06-01T13:59:00.000+02:00' }, { ts: ms }, { ts: String(ms) }]);
    expect(r.refused).toEqual([]);
    expect(r.frames.map((f) => f.ts.getTime())).toEqual([ms, ms, ms, ms]);
  });

  it('accepts ts up to 60 s ahead of now', () => {
    expect(decode({ ts: NOW.getTime() + 60_000 }).frames).toHaveLength(1);
  });

  it('lets data win over pids for the same key and keeps the other pid values', () => {
    const [f] = decode({ ts: TS, pids: { '0D': '3C', '0C': '1AF8' }, data: { vehicleSpeed: 61 } }).frames;
    expect(f.data).toEqual({ vehicleSpeed: 61, rpm: 1726 });
  });

  it('treats null optional fields as absent', () => {
    const [f] = decode({ ts: TS, id: null, kind: null, location: null, data: null, vin: null }).frames;
    expect(f).toMatchObject({ frameId: null, kind: 'telemetry', data: {}, lat: null, vin: null });
  });

  it('ignores unknown fields, at the top level and in location, accel and battery, and names them', () => {
    const [f] = decode({ ts: TS, spd: 3, location: { lat: 1, lon: 2, fix: '3d' }, battery: { voltage: 12, temp: 30 } }).frames;
    expect(f).toMatchObject({ lat: 1, lon: 2, battery: { voltage: 12 } });
    expect(f.ignoredFields).toEqual(['spd', 'location.fix', 'battery.temp']);
    expect(decode({ ts: TS }).frames[0].ignoredFields).toBeUndefined();
  });

  it('refuses a frame nested deeper than 32 levels without walking it, and decodes the others', () => {
    const deep = `${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}`;
    const deepValue = `{"ts":"${TS}","data":{"auxIO":${'['.repeat(40)}${']'.repeat(40)}}}`;
    const r = decodePayload(Buffer.from(`[{"ts":"${TS}"},${deep},${deepValue}]`), { now: NOW });
    expect(r.frames).toHaveLength(1);
    expect(r.refused.map((x) => [x.index, x.reason, x.raw])).toEqual([
      [1, 'frame 1: nests arrays or objects more than 32 levels deep', null],
      [2, 'frame 2: nests arrays or objects more than 32 levels deep', null],
    ]);
  });

  const GOOD = { id: 'good', ts: TS, pids: { '0D': '3C' } };
  it.each([
    [{ kind: 'startup' }, 'frame 1: ts is missing'],
    [{ ts: 'yesterday' }, 'frame 1: ts "yesterday" is not an ISO 8601 date-time with a time zone, nor epoch milliseconds'],
    [{ ts: '2024-06-01T11:59:00' }, 'frame 1: ts "2024-06-01T11:59:00" is not an ISO 8601 date-time with a time zone, nor epoch milliseconds'],
    [{ ts: '2024-02-30T10:00:00Z' }, 'frame 1: ts "2024-02-30T10:00:00Z" is not a valid date'],
    [{ ts: true }, 'frame 1: ts must be an ISO 8601 string or epoch milliseconds, got a boolean'],
    [{ ts: '1999-12-31T23:59:59Z' }, 'frame 1: ts 1999-12-31T23:59:59.000Z is before 2000-01-01'],
    [{ ts: 1717243200 }, 'frame 1: ts 1970-01-20T21:00:43.200Z is before 2000-01-01 (epoch seconds? ts must be milliseconds)'],
    [{ ts: '2024-06-01T12:04:59Z' }, "frame 1: ts 2024-06-01T12:04:59.000Z is more than 60 s ahead of the gateway's clock (2024-06-01T12:00:00.000Z)"],
    [{ ts: '2024-06-01T12:01:00.001Z' }, "frame 1: ts 2024-06-01T12:01:00.001Z is more than 60 s ahead of the gateway's clock (2024-06-01T12:00:00.000Z)"],
    [{ ts: 8640000000000000 }, 'frame 1: ts 8640000000000000 is outside 1970-01-01T00:00:00.000Z..9999-12-31T23:59:59.999Z'],
    [{ ts: -8640000000000000 }, 'frame 1: ts -8640000000000000 is outside 1970-01-01T00:00:00.000Z..9999-12-31T23:59:59.999Z'],
    [{ ts: '2024-06-01T24:00:00Z' }, 'frame 1: ts "2024-06-01T24:00:00Z" is not a valid date'],
    [{ ts: '2024-06-01T10:00:00+24:00' }, 'frame 1: ts "2024-06-01T10:00:00+24:00" is not a valid date'],
    [{ ts: TS, id: 'x'.repeat(129) }, 'frame 1: id must be a string of 1 to 128 characters or a non-negative integer'],
    [{ ts: TS, kind: 'boot' }, 'frame 1: kind "boot" is not one of telemetry, startup, shutdown, phone-home'],
    [{ ts: TS, location: { lat: 95, lon: 0 } }, 'frame 1: location.lat 95 is out of range -90..90'],
    [{ ts: TS, location: { lat: 0, lon: -180.5 } }, 'frame 1: location.lon -180.5 is out of range -180..180'],
    [{ ts: TS, location: { lat: 0 } }, 'frame 1: location.lon is missing'],
    [{ ts: TS, location: { lat: '32.7', lon: 0 } }, 'frame 1: location.lat must be a number, got "32.7"'],
    [{ ts: TS, location: { lat: 0, lon: 0, speed: -1 } }, 'frame 1: location.speed -1 is out of range 0..1000'],
    [{ ts: TS, location: { lat: 0, lon: 0, heading: 361 } }, 'frame 1: location.heading 361 is out of range 0..360'],
    [{ ts: TS, location: { lat: 0, lon: 0, satellites: 3.5 } }, 'frame 1: location.satellites 3.5 must be an integer'],
    [{ ts: TS, location: [0, 0] }, 'frame 1: location must be an object, got an array'],
    [{ ts: TS, accel: { ...ACCEL, minZ: undefined } }, 'frame 1: accel.minZ is missing'],
    [{ ts: TS, pids: { '0D': '3C', '0C': '1A' } }, 'frame 1: pids: PID 0C: expected 2 data bytes, got 1'],
    [{ ts: TS, pids: { '99': '00' } }, 'frame 1: pids: PID 99: not a supported service 01 PID'],
    [{ ts: TS, data: { rpm: 'fast' } }, 'frame 1: data.rpm must be a number between 0 and 16383.75, got "fast"'],
    [{ ts: TS, data: { speed: 60 } }, 'frame 1: data.speed is not a known parameter'],
    [{ ts: TS, data: { location: { type: 'Point', coordinates: [0, 0] } } },
      'frame 1: data.location is not allowed; send location at the top level of the frame'],
    [{ ts: TS, data: { accel: ACCEL } }, 'frame 1: data.accel is not allowed; send accel at the top level of the frame'],
    [{ ts: TS, vin: '1HGCM82633A0O4352' }, 'frame 1: vin: VIN contains "O" (I, O and Q are not used in VINs)'],
    [{ ts: TS, vin: 12345 }, 'frame 1: vin must be a string, got a number'],
    [{ ts: TS, dtcs: ['P0100', 'P9999'] }, 'frame 1: dtcs[1] "P9999" is not a DTC like P0100'],
    [{ ts: TS, dtcs: { P0100: true } }, 'frame 1: dtcs must be an array of codes or a hex string, got an object'],
    [{ ts: TS, battery: { voltage: 40 } }, 'frame 1: battery.voltage 40 is out of range 0..30'],
    [{ ts: TS, battery: { soc: 50 } }, 'frame 1: battery.voltage is missing'],
    [{ ts: TS, battery: { voltage: 12, soc: 101 } }, 'frame 1: battery.soc 101 is out of range 0..100'],
    [{ ts: TS, collision: { peakG: 'high' } }, 'frame 1: collision.peakG must be a number, got "high"'],
    [42, 'frame 1: must be an object, got a number'],
  ])('refuses %j while the good frames of the payload decode', (bad, reason) => {
    const r = decode([GOOD, bad, GOOD]);
    expect(r.payloadError).toBeNull();
    expect(r.frames.map((f) => [f.frameId, f.data])).toEqual([['good', { vehicleSpeed: 60 }], ['good', { vehicleSpeed: 60 }]]);
    expect(r.refused).toEqual([{ index: 1, frameId: null, reason, raw: bad }]);
  });

  it('takes a frame stamped up to the allowed skew ahead of the clock (60 s unless told), and refuses one beyond it', () => {
    expect(decode({ ts: '2024-06-01T12:01:00Z' }).frames.map((f) => f.ts)).toEqual([new Date('2024-06-01T12:01:00Z')]);
    // untold, the skew is the setting's default
    const skew = loadConfig({}, {}).maxFutureSkewMs;
    expect(decode({ ts: new Date(NOW.getTime() + skew + 1).toISOString() }).refused.map((r) => r.index)).toEqual([0]);
    expect(decode({ ts: '2024-06-01T12:00:05Z' }, { maxFutureSkewMs: 5000 }).refused).toEqual([]);
    expect(decode({ ts: '2024-06-01T12:00:05.001Z' }, { maxFutureSkewMs: 5000 }).refused.map((r) => r.reason)).toEqual([
      "frame 0: ts 2024-06-01T12:00:05.001Z is more than 5 s ahead of the gateway's clock (2024-06-01T12:00:00.000Z)",
    ]);
  });

  it('keeps the frame id of a refused frame', () => {
    expect(decode({ id: 'f-9', ts: TS, kind: 'boot' }).refused).toEqual([{
      index: 0, frameId: 'f-9', reason: 'frame 0: kind "boot" is not one of telemetry, startup, shutdown, phone-home',
      raw: { id: 'f-9', ts: TS, kind: 'boot' },
    }]);
  });

  it.each([
    ['oversize', Buffer.alloc(300000, 0x20), 'payload of 300000 bytes exceeds the 262144-byte limit'],
    ['not UTF-8', Buffer.from([0x7b, 0xff, 0x7d]), 'payload is not valid UTF-8'],
    ['truncated JSON', Buffer.from('{"ts":'), 'payload is not JSON: Unexpected end of JSON input'],
    ['empty', Buffer.alloc(0), 'payload is not JSON: Unexpected end of JSON input'],
    ['a number', Buffer.from('42'), 'payload must be a frame object or an array of frames, got a number'],
    ['null', Buffer.from('null'), 'payload must be a frame object or an array of frames, got null'],
    ['an empty array', Buffer.from('[]'), 'payload is an empty array'],
  ])('gives a payload error when the payload is %s', (_, payload, payloadError) => {
    expect(decodePayload(payload, { now: NOW })).toEqual({ frames: [], refused: [], payloadError });
  });

  it('reports the JSON parser message for malformed JSON', () => {
    expect(decodePayload(Buffer.from('{ts: 1}'), { now: NOW }).payloadError).toMatch(/^payload is not JSON: .*property name/);
  });

  it('honours a custom size limit', () => {
    expect(decode({ ts: TS }, { maxBytes: 10 }).payloadError).toBe('payload of 29 bytes exceeds the 10-byte limit');
  });
});

describe('decodeFrame', () => {
  it('returns a refusal, never throws, for any JSON value', () => {
    for (const raw of [null, 'x', [], [1], true, {}]) {
      const r = decodeFrame(raw, 3, NOW) as RefusedFrame;
      expect(r.index).toBe(3);
      expect(r.reason).toMatch(/^frame 3: /);
    }
    expect((decodeFrame({}, 3, NOW) as RefusedFrame).reason).toBe('frame 3: ts is missing');
  });
});
