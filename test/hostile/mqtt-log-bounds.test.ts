// What one client can make the gateway log or keep is bounded: a SUBSCRIBE of more filters than the limit closes
// the connection, a topic over the length limit is refused, topics are cut in log lines and dead letters, one
// payload's refusals make one short line, and a client repeating a refusal is logged once per window with the count.
import { Writable } from 'node:stream';
import mqttPacket from 'mqtt-packet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../lib/logger.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { connectAsync } from 'mqtt';
import { connackCode, connectedDevice, metric, rawMqtt, stillServing, ts, within } from './mqtt.helpers.js';

const MAX_FILTERS = 8;
const MAX_TOPIC = 256;
/** Longer than any test: a window's count is logged when the test flushes it. */
const WINDOW_MS = 600_000;
/** Every line the gateway logs, as written. */
const lines: string[] = [];
const sink = new Writable({ write(chunk, _enc, next) { lines.push(...String(chunk).split('\n').filter(Boolean)); next(); } });

let g: TestGateway;
beforeAll(async () => {
  g = await startTestGateway({ mqttMaxSubscribeFilters: MAX_FILTERS, mqttMaxTopicBytes: MAX_TOPIC, mqttLogThrottleMs: WINDOW_MS },
    createLogger('info', sink));
});
afterAll(async () => { await g?.close(); });

/** The lines logged while `act` runs (and `settleMs` after it). */
async function logged(act: () => Promise<unknown>, settleMs = 100): Promise<{ msg: string; [k: string]: unknown }[]> {
  const from = lines.length;
  await act();
  await new Promise((r) => setTimeout(r, settleMs));
  return lines.slice(from).map((l) => JSON.parse(l));
}
const longest = (out: unknown[]) => Math.max(0, ...out.map((l) => JSON.stringify(l).length));

describe('log and dead-letter bounds', () => {
  it('closes a connection whose SUBSCRIBE has more filters than the limit: 20 SUBSCRIBEs of 10,000 filters log one line', async () => {
    const d = await g.t.make.device();
    const c = await rawMqtt(g.gw.ports.mqtt);
    expect((await c.connect(d)).returnCode).toBe(0);
    const before = await metric(g, 'drivewire_gateway_connections_refused_total{reason="too_many_filters"}');
    let subacks = 0;
    const out = await logged(async () => {
      const suback = c.next('suback').then(() => { subacks++; }, () => undefined);
      for (let p = 1; p <= 20 && !c.isClosed(); p++) {
        c.send({ cmd: 'subscribe', messageId: p, subscriptions: Array.from({ length: 10_000 }, (_, i) => ({ topic: `a/${i}`, qos: 0 })) });
      }
      await within(c.closed, 'the server closing the connection', 3000);
      await suback;
    });
    expect(subacks).toBe(0);
    expect(out.map((l) => l.msg)).toEqual([`MQTT connection cut: SUBSCRIBE of more than ${MAX_FILTERS} filters`]);
    expect(longest(out)).toBeLessThan(400);
    expect(await metric(g, 'drivewire_gateway_connections_refused_total{reason="too_many_filters"}')).toBe(before + 1);
    await stillServing(g);
  });

  it('answers 0x80 to each refused filter of SUBSCRIBEs within the limit, and logs the repeats once per window with their count', async () => {
    const d = await g.t.make.device();
    const other = await g.t.make.device();
    const c = await rawMqtt(g.gw.ports.mqtt);
    expect((await c.connect(d)).returnCode).toBe(0);
    const subscribe = async (messageId: number, topics: string[]) => {
      c.send({ cmd: 'subscribe', messageId, subscriptions: topics.map((topic) => ({ topic, qos: 1 })) });
      return (await c.next<mqttPacket.ISubackPacket>('suback')).granted;
    };
    const filters = Array.from({ length: MAX_FILTERS }, (_, i) => `devices/${other.id}/commands/${i}`);
    const out = await logged(async () => {
      for (let p = 1; p <= 100; p++) expect(await subscribe(p, filters)).toEqual(filters.map(() => 128));
      expect(await subscribe(101, [`devices/${d.id}/commands`])).toEqual([1]);
      g.gw.flushLogs(); // the window's end
    });
    expect(c.isClosed()).toBe(false);
    const refusals = out.filter((l) => l.msg.startsWith('subscription refused'));
    expect(refusals.map((l) => l.suppressed ?? 0)).toEqual([0, 100 * MAX_FILTERS - 1]);
    expect(refusals[1].msg).toBe(`subscription refused: a device subscribes only to devices/<its id>/commands (${100 * MAX_FILTERS - 1} more in the last ${WINDOW_MS / 1000} s)`);
    await c.end();
  });

  it('logs CONNECTs refused from one address once per window, whatever usernames they carry', async () => {
    const out = await logged(async () => {
      for (let k = 0; k < 30; k++) {
        expect(await connackCode(connectAsync(g.url, { username: crypto.randomUUID(), password: 'x', reconnectPeriod: 0, connectTimeout: 5000 }))).toBe(5);
      }
      g.gw.flushLogs();
    });
    const refusals = out.filter((l) => l.msg.startsWith('MQTT connection refused'));
    expect(refusals.map((l) => [l.remote, l.suppressed ?? 0])).toEqual([['127.0.0.1', 0], ['127.0.0.1', 29]]);
  });

  it('refuses a PUBLISH topic over the length limit: the connection closes, the dead letter and the log line hold the topic cut', async () => {
    const dev = await connectedDevice(g);
    const topic = `devices/${dev.d.id}/${'x'.repeat(60_000)}`;
    dev.client.on('error', () => undefined);
    const closed = new Promise<void>((r) => dev.client.once('close', () => r()));
    const out = await logged(async () => {
      dev.client.publish(topic, JSON.stringify({ ts: ts(), data: { rpm: 1 } }), { qos: 1 });
      await within(closed, 'the server closing the connection');
    });
    expect(longest(out)).toBeLessThan(800);
    expect(out.map((l) => l.msg)).toEqual([`publish refused: topic of 60045 bytes exceeds the ${MAX_TOPIC}-byte limit`]);
    const [letter] = await g.t.repos.ingest.deadLetters(dev.d.id);
    expect(letter.reason).toBe(`publish refused: topic of 60045 bytes exceeds the ${MAX_TOPIC}-byte limit`);
    expect(letter.topic).toBe(`${topic.slice(0, MAX_TOPIC)}… (60045 bytes)`);
    await stillServing(g);
  });

  it('answers 0x80 to a 60,000-byte filter and logs it cut', async () => {
    const d = await g.t.make.device();
    const c = await rawMqtt(g.gw.ports.mqtt);
    expect((await c.connect(d)).returnCode).toBe(0);
    const out = await logged(async () => {
      c.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: `devices/${d.id}/${'y'.repeat(60_000)}`, qos: 1 }] });
      expect((await c.next<mqttPacket.ISubackPacket>('suback')).granted).toEqual([128]);
    });
    expect(out.length).toBe(1);
    expect(longest(out)).toBeLessThan(800);
    await c.end();
  });

  it('logs a payload of 2,000 refused frames as one short line with their count', async () => {
    const dev = await connectedDevice(g);
    const out = await logged(() => dev.publish(JSON.stringify(Array.from({ length: 2000 }, () => ({ ts: 'not a date', data: { rpm: 1 } })))));
    expect(out.map((l) => [l.msg, l.refused])).toEqual([['frames refused', 2000]]);
    expect(longest(out)).toBeLessThan(1000);
  });
});
