import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';

/**
 * Over a real gateway, real HTTP and a real WebSocket client: when an application
 * loses a device its live stream of that device ends within a second and pushes nothing more.
 */
type Frame = { type: string; subject?: { id: string }; payload?: any };
let g: TestGateway;
let base: string;
let admin: string;
const sockets: WebSocket[] = [];
beforeAll(async () => {
  g = await startTestGateway();
  await g.t.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(g.t.app.server.address() as AddressInfo).port}`;
  admin = `Bearer ${await g.t.repos.applications.createAdminToken()}`;
});
afterAll(async () => { for (const ws of sockets) ws.terminate(); await g?.close(); });

async function stream(auth: string) {
  const ws = new WebSocket(`${base.replace('http', 'ws')}/api/v1/messages`, { headers: { authorization: auth } });
  sockets.push(ws);
  const frames: Frame[] = [];
  ws.on('message', (raw) => { const f = JSON.parse(String(raw)); if (f.type !== 'health') frames.push(f); });
  await new Promise((resolve, reject) => { ws.once('open', resolve); ws.once('error', reject); });
  const until = async (what: string, ok: () => boolean, ms = 5_000) => {
    const deadline = Date.now() + ms;
    while (!ok()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; frames: ${JSON.stringify(frames)}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  };
  return { ws, frames, until };
}

/** An application streaming its device, which publishes through the gateway; `pubs` counts what arrived. */
async function watched(kind: 'enterprise' | 'consumer' = 'enterprise') {
  const app = await g.t.make.application(kind);
  const device = await g.t.make.device(app.principal);
  const client = await g.connect(device);
  let n = 0;
  const publish = () => client.publishAsync(`devices/${device.id}/frames`, JSON.stringify({ ts: new Date().toISOString(), pids: { '0D': (++n).toString(16).padStart(2, '0') } }), { qos: 1 });
  const s = await stream(app.auth);
  const subject = { type: 'device', id: device.id };
  s.ws.send(JSON.stringify({ type: 'sub', subject }));
  await s.until('the sub ack', () => s.frames.some((f) => f.type === 'sub' && f.payload?.ack === true));
  await publish();
  await s.until('a first message', () => s.frames.some((f) => f.type === 'pub'));
  const pubs = () => s.frames.filter((f) => f.type === 'pub').length;
  /** Ends access with `end`, then checks the stream said so within a second and stays silent. */
  async function expectEndedBy(end: () => Promise<unknown>) {
    const before = pubs();
    const started = Date.now();
    await end();
    await s.until('the unasked unsub', () => s.frames.some((f) => f.type === 'unsub'), 1_000);
    expect(Date.now() - started).toBeLessThan(1_000);
    const unsub = s.frames.find((f) => f.type === 'unsub')!;
    expect(unsub).toEqual({ type: 'unsub', subject, payload: { ack: true, reason: expect.stringContaining(`Access to device ${device.id} has ended`) } });
    await publish();
    await publish();
    await new Promise((r) => setTimeout(r, 400));
    expect(pubs()).toBe(before);
    expect(s.ws.readyState).toBe(WebSocket.OPEN); // the connection itself carries on
  }
  return { app, device, expectEndedBy };
}

const http = (method: string, path: string, authorization: string) =>
  fetch(`${base}${path}`, { method, headers: { authorization }, signal: AbortSignal.timeout(5_000) }).then((r) => r.status);

describe('live stream after access ends', () => {
  it('ends the subscription within a second, with a reason, and pushes no further message: deregistration, admin revocation, or a change made by another process', async () => {
    const a = await watched('enterprise');
    await a.expectEndedBy(async () => expect(await http('DELETE', `/api/v1/devices/${a.device.id}`, a.app.auth)).toBe(204));

    const b = await watched('consumer');
    await b.expectEndedBy(async () => expect(await http('DELETE', `/admin/v1/devices/${b.device.id}/authorizations/${b.app.id}`, admin)).toBe(204));

    // Another process (an API or admin tool on the same database) revokes: no in-process signal, the re-check finds it.
    const c = await watched('enterprise');
    await c.expectEndedBy(() => g.t.db.knex('authorizations').where({ application_id: c.app.id, device_id: c.device.id }).delete());
  });
});
