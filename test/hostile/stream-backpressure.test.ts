import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { createBus } from '../../lib/bus.js';
import { liveApi } from './api-helpers.js';

/**
 * Live-stream consumers that do not keep up, over real HTTP and real WebSocket clients: a connection whose unsent
 * frames pass the send-buffer limit is closed (1013, with a reason) while a reading one keeps receiving everything,
 * and an application holds a bounded number of streams. Messages come from the in-process bus the gateway feeds.
 */
const LIMIT = 256 * 1024;
const bus = createBus();
const { base, setup, t } = liveApi({ streamMaxBufferedBytes: LIMIT, streamsPerApplication: 3 }, { onMessage: bus.onMessage });

type Frame = { type: string; payload?: any };
interface Client { ws: WebSocket; frames: Frame[]; closed: Promise<{ code: number; reason: string }> }

function connect(auth: string): Promise<Client> {
  const ws = new WebSocket(`${base().replace('http', 'ws')}/api/v1/messages`, { headers: { authorization: auth } });
  const frames: Frame[] = [];
  ws.on('message', (raw) => frames.push(JSON.parse(String(raw))));
  const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: String(reason) })));
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve({ ws, frames, closed }));
    ws.once('error', reject);
  });
}

/** The upgrade's answer when it is refused: status and JSON body. */
function refusedUpgrade(auth: string): Promise<{ status: number; body: any }> {
  const ws = new WebSocket(`${base().replace('http', 'ws')}/api/v1/messages`, { headers: { authorization: auth } });
  return new Promise((resolve, reject) => {
    ws.once('open', () => { ws.terminate(); reject(new Error('the upgrade was accepted')); });
    ws.once('unexpected-response', (_req, res) => {
      let text = '';
      res.on('data', (d) => { text += d; });
      res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
    });
    ws.once('error', () => {});
  });
}

async function subscribe(c: Client, deviceId: string) {
  c.ws.send(JSON.stringify({ type: 'sub', subject: { type: 'device', id: deviceId } }));
  await expect.poll(() => c.frames.find((f) => f.type === 'sub')?.payload, { timeout: 3_000 }).toEqual({ ack: true });
}

const pubs = (c: Client) => c.frames.filter((f) => f.type === 'pub').length;

describe('live stream consumers that fall behind', () => {
  it('closes a connection that stops reading once its unsent frames pass the limit, while a reading one receives every message', async () => {
    const { app, device } = await setup();
    const reading = await connect(app.auth);
    const stalled = await connect(app.auth);
    await subscribe(reading, device.id);
    await subscribe(stalled, device.id);
    (stalled.ws as unknown as { _socket: { pause(): void; resume(): void } })._socket.pause();
    let stalledClosedEarly = false;
    void stalled.closed.then(() => { stalledClosedEarly = true; });

    // A busy device: 400 messages of ~20 KB (8 MB), in bursts, as fast as the reading client takes them.
    const note = 'x'.repeat(20_000);
    const total = 400;
    for (let i = 0; i < total; i += 20) {
      bus.publishMessages(Array.from({ length: 20 }, (_, k) => ({ id: randomUUID(), deviceId: device.id, timestamp: new Date(), data: { seq: i + k, note } })));
      await expect.poll(() => pubs(reading), { timeout: 5_000, interval: 5 }).toBe(i + 20);
    }
    expect(reading.frames.filter((f) => f.type === 'pub').map((f) => f.payload.data.seq)).toEqual([...Array(total).keys()]);
    expect(reading.ws.readyState).toBe(WebSocket.OPEN);
    expect(stalledClosedEarly).toBe(false); // it reads nothing, so it cannot have seen the close yet

    // Reading again, the stalled client gets what was already on its way, then the close and its reason.
    (stalled.ws as unknown as { _socket: { resume(): void } })._socket.resume();
    const closed = await Promise.race([stalled.closed, new Promise((r) => setTimeout(() => r('still open after 5 s'), 5_000))]);
    expect(closed).toEqual({ code: 1013, reason: expect.stringMatching(/too slow.*262144 bytes/) });
    expect(pubs(stalled)).toBeLessThan(total);
    expect(pubs(stalled)).toBeGreaterThan(0);

    // The reading client carries on.
    bus.publishMessages([{ id: randomUUID(), deviceId: device.id, timestamp: new Date(), data: { seq: total } }]);
    await expect.poll(() => pubs(reading), { timeout: 2_000 }).toBe(total + 1);
    reading.ws.close();
  }, 60_000);

  it('refuses a stream past streamsPerApplication with 429 and the error body; other applications, and a freed place, are served', async () => {
    const { app } = await setup();
    const open = [await connect(app.auth), await connect(app.auth), await connect(app.auth)];
    const refused = await refusedUpgrade(app.auth);
    expect(refused).toEqual({
      status: 429,
      body: { statusCode: 429, error: 'Too Many Requests', message: 'At most 3 live streams per application at once: close one first' },
    });
    const other = await t().make.application();
    const theirs = await connect(other.auth);
    open[0].ws.close();
    await open[0].closed;
    // The place is freed once the server has seen the socket close.
    await expect.poll(async () => { try { const c = await connect(app.auth); open.push(c); return true; } catch { return false; } }, { timeout: 3_000 }).toBe(true);
    for (const c of [...open, theirs]) c.ws.close();
  });
});
