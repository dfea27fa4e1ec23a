// One deeply nested frame must not overflow the stack (in JSON.stringify or anywhere) and kill the process.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { connectedDevice, goodFrame, metric, ts } from './mqtt.helpers.js';
import { DEAD_LETTER_RAW_BYTES } from '../../db/repositories/ingest.repository.js';

let g: TestGateway;
beforeAll(async () => { g = await startTestGateway(); });
afterAll(async () => { await g?.close(); });

const REASON = 'nests arrays or objects more than 32 levels deep';
const arrays = `${'['.repeat(10_000)}${']'.repeat(10_000)}`;
const objects = `${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}`;
/** What a dead letter keeps of an ASCII payload: its first bytes, marked as cut, when it is over the bound. */
const kept = (payload: string) => {
  const marker = `…[cut: ${payload.length} bytes]`;
  return payload.length <= DEAD_LETTER_RAW_BYTES ? payload : payload.slice(0, DEAD_LETTER_RAW_BYTES - Buffer.byteLength(marker)) + marker;
};

describe('deeply nested frames', () => {
  it.each([
    ['10,000 nested arrays (20 KB)', arrays, 0],
    ['{"a": nested 10,000 times', objects, 0],
    ['a batch whose second frame nests 10,000 arrays in a data value', `[${goodFrame(1)},{"ts":"${ts()}","data":{"auxIO":${arrays}}},${goodFrame(2)}]`, 1],
    ['a batch whose second frame nests objects in collision', `[${goodFrame(1)},{"ts":"${ts()}","collision":{"peakG":${objects}}},${goodFrame(2)}]`, 1],
    ['a frame nesting in an unknown field', `{"ts":"${ts()}","data":{"rpm":1},"x":${arrays}}`, 0],
  ])('refuses %s with a reason, counts it, keeps the connection and stores the frames around it', async (_, payload, index) => {
    const dev = await connectedDevice(g);
    const before = await metric(g, 'drivewire_gateway_frames_refused_total{reason="too_deep"}');
    await dev.publish(payload); // acknowledged: the process is alive and the refusal committed
    const [letter] = await dev.letters();
    expect(letter).toEqual({ frameIndex: index, reason: `frame ${index}: ${REASON}`, raw: kept(payload) });
    expect(await metric(g, 'drivewire_gateway_frames_refused_total{reason="too_deep"}')).toBe(before + 1);
    expect(dev.client.connected).toBe(true);
    await dev.publish(goodFrame(3));
    expect(await dev.storedRpm()).toEqual(index === 1 ? [1, 2, 3] : [3]);
  });
});
