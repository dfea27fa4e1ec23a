// Who a connection is: a username that is not a UUID is refused (CONNACK 5) without asking the database, and a
// device connecting with another device's client id is refused (CONNACK 2): it neither disconnects the owner nor
// takes over its persistent session.
import { connect, connectAsync, type MqttClient } from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { connackCode, connectedDevice, goodFrame, metric, stillServing, within } from './mqtt.helpers.js';
import { recordStatements } from '../helpers/statements.js';

let g: TestGateway;
beforeAll(async () => { g = await startTestGateway(); });
afterAll(async () => { await g?.close(); });

const opts = { reconnectPeriod: 0, connectTimeout: 4000 };

describe('who a connection is', () => {
  it('refuses a username that is not a UUID in form with CONNACK 5, without asking the database', async () => {
    const d = await g.t.make.device();
    const { sql } = await recordStatements(g.t.db.knex, async () => {
      for (const username of [
        'zzzzzzzz-zzzz-zzzz-zzzz-zzzzzzzzzzzz', '-'.repeat(36), '0123456789abcdef0123456789abcdef-123',
        `{${d.id}}`, d.id.replace(/-/g, ''), `${d.id}\u0000`, 'x'.repeat(5000),
      ]) {
        const code = await within(connackCode(connectAsync(g.url, { ...opts, username, clientId: d.id, password: d.secret })), 'CONNACK');
        expect([username.slice(0, 40), code]).toEqual([username.slice(0, 40), 5]);
      }
    });
    expect(sql).toEqual([]);
    await stillServing(g);
  });

  it('refuses a client id other than the device id with CONNACK 2; the device owning it stays connected and keeps its queued commands', async () => {
    const a = await connectedDevice(g);
    const b = await g.t.make.device();
    const commands = `devices/${a.d.id}/commands`;
    // A: a persistent session subscribed to its commands, then offline with one command queued for it.
    const toA: string[] = [];
    const persistent = async () => {
      const c = connect(g.url, { ...opts, username: a.d.id, password: a.d.secret, clientId: a.d.id, clean: false });
      c.on('message', (_t, m) => toA.push(m.toString())); // before CONNACK: a queued command follows it at once
      await within(new Promise((resolve, reject) => { c.once('connect', resolve); c.once('error', reject); }), 'CONNECT A');
      return c;
    };
    await a.client.endAsync();
    let session = await persistent();
    await session.subscribeAsync(commands, { qos: 1 });
    await session.endAsync();
    await new Promise<void>((resolve, reject) => g.gw.broker.publish(
      { cmd: 'publish', topic: commands, payload: Buffer.from('unlock'), qos: 1, retain: false, dup: false },
      (err) => (err ? reject(err) : resolve())));

    const before = await metric(g, 'drivewire_gateway_connections_refused_total{reason="client_id"}');
    const received: string[] = [];
    const asA = (clientId: string, clean: boolean) => connectAsync(g.url, { ...opts, username: b.id, password: b.secret, clientId, clean })
      .then((c: MqttClient) => { c.on('message', (_t, m) => received.push(m.toString())); return c; });
    expect(await within(connackCode(asA(a.d.id, false)), 'CONNACK')).toBe(2);
    expect(await within(connackCode(asA(a.d.id.toUpperCase(), true)), 'CONNACK')).toBe(2);
    expect(await within(connackCode(asA('', true)), 'CONNACK')).toBe(2);
    expect(await metric(g, 'drivewire_gateway_connections_refused_total{reason="client_id"}')).toBe(before + 3);

    // A, online again, gets its command and is not disconnected by another attempt on its client id.
    session = await persistent();
    const until = Date.now() + 5000;
    while (!toA.length && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    expect(toA).toEqual(['unlock']);
    expect(await within(connackCode(asA(a.d.id, false)), 'CONNACK')).toBe(2);
    expect(session.connected).toBe(true);
    await within(session.publishAsync(`devices/${a.d.id}/frames`, goodFrame(42), { qos: 1 }), 'PUBACK');
    expect(await a.storedRpm()).toEqual([42]);
    expect(received).toEqual([]);
    await session.endAsync();
  });
});
