import { describe, expect, it } from 'vitest';
import type { Client, PublishPacket } from 'aedes';
import memory from 'aedes-persistence';
import { MAX_IDS_PER_DEVICE, qos2Receipts, type IncomingStore } from '../../gateway/qos2.js';

// Aedes' in-memory store, as the broker's check sees it while a copy's ingest has not settled: nothing stored yet.
const nothingStored = (memory as unknown as () => IncomingStore)();
const client = { id: 'dev' } as Client;
const packet = (messageId: number, dup = false) => ({ cmd: 'publish', qos: 2, messageId, dup, topic: 't', payload: Buffer.alloc(0), retain: false }) as PublishPacket;

describe('QoS 2 receipts', () => {
  it('keeps a packet id until its PUBREL, then forgets it: the id carries a new message, and the device is forgotten', async () => {
    const r = qos2Receipts(() => nothingStored);
    let taken = 0;
    const take = async () => { taken++; };
    await r.once('dev', client, packet(1), take);
    await r.once('dev', client, packet(1, true), take); // a re-send before PUBREL
    expect([taken, r.size()]).toEqual([1, 1]);
    r.released('dev', 1);
    expect(r.size()).toBe(0);
    await r.once('dev', client, packet(1, true), take); // after PUBREL: not the same message
    expect(taken).toBe(2);
  });

  it('keeps at most MAX_IDS_PER_DEVICE ids of a device whose exchanges never end', async () => {
    const r = qos2Receipts(() => nothingStored);
    let taken = 0;
    const take = async () => { taken++; };
    for (let id = 1; id <= MAX_IDS_PER_DEVICE + 500; id++) await r.once('dev', client, packet(id), take);
    await r.once('dev', client, packet(MAX_IDS_PER_DEVICE + 500, true), take); // the newest is kept
    expect(taken).toBe(MAX_IDS_PER_DEVICE + 500);
    for (let id = 1; id <= MAX_IDS_PER_DEVICE + 500; id++) r.released('dev', id);
    expect(r.size()).toBe(0);
  });

  it('takes a copy re-sent while the first is pending once the first failed (its connection closed while it waited)', async () => {
    const r = qos2Receipts(() => nothingStored);
    let fail: ((e: Error) => void) | undefined;
    const first = r.once('dev', client, packet(3), () => new Promise<void>((_, reject) => { fail = reject; }));
    let taken = 0;
    const again = r.once('dev', { id: 'dev' } as Client, packet(3, true), async () => { taken++; });
    while (!fail) await new Promise((r) => setImmediate(r)); // the first copy's ingest runs
    fail(new Error('gone'));
    await expect(first).rejects.toThrow('gone');
    await again;
    expect(taken).toBe(1);
  });
});
