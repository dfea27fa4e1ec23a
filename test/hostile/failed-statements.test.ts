// The platform after many statements that fail in the database: the API, /health and the gateway still answer.
import { connectAsync } from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startE2ePlatform, type E2ePlatform } from '../helpers/e2e.js';
import { eventually } from '../helpers/gateway.js';

let e: E2ePlatform;
beforeAll(async () => { e = await startE2ePlatform(); });
afterAll(async () => { await e?.close(); });

describe('the platform after many failed statements', () => {
  it('answers /health 200 and stores a device frame after 10,000 failures of the API and of its database', async () => {
    const { knex } = e.p.db;
    // a window at the edge of JavaScript's dates, which the database refuses
    const edge: { status: number }[] = [];
    for (let i = 0; i < 40; i++) {
      edge.push(...await Promise.all(Array.from({ length: 50 }, () => e.api('GET', '/api/v1/transactions?since=-8640000000000000'))));
    }
    expect(edge).toHaveLength(2000);
    expect(edge.filter((r) => r.status === 200)).toEqual([]);
    // and statements that fail on the platform's own database: overflow, division by zero, syntax, PostGIS
    const failing = ['SELECT ?::float8 * ?::float8', 'SELECT 1 / (? - ?)', 'SELEC ? + ?', "SELECT ST_GeomFromText('POINT(bad)'), ?, ?"];
    let failed = 0;
    for (let i = 0; i < 8000; i++) {
      const err = await knex.raw(failing[i % failing.length], [1e200, 1e200]).then(() => null, (x: Error) => x);
      if (!err || /stack depth/.test(err.message)) break; // a wedged database: every further failure would also cost its stack
      failed++;
    }
    expect(failed).toBe(8000);

    const health = await fetch(`${e.p.apiUrl}/health`);
    expect(health.status).toBe(200);
    const { device, secret } = await e.newDevice('after-failures');
    const client = await connectAsync(e.mqttUrl, { username: device.id, password: secret, clientId: device.id, reconnectPeriod: 0 });
    try {
      const ts = Date.now() - 1000;
      await client.publishAsync(`devices/${device.id}/frames`, JSON.stringify([{ id: 'after', ts, kind: 'startup', data: { rpm: 800 } }]), { qos: 1 });
      type Message = { timestamp: string; data: { rpm?: number } };
      const messages = await eventually(async (): Promise<Message[]> => (await e.api('GET', `/api/v1/devices/${device.id}/messages`)).body.messages ?? [],
        (m) => m.length > 0);
      expect(messages.map((m) => [m.timestamp, m.data.rpm])).toEqual([[new Date(ts).toISOString(), 800]]);
    } finally {
      await client.endAsync();
    }
  }, 120_000);
});
