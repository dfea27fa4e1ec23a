import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => { t = await buildTestApp({ allowPrivateWebhooks: false }); });
afterAll(async () => { await t?.close(); });

/* No request is ever sent here: creating a subscription only resolves its host. */
describe('callback URLs on non-public addresses (allowPrivateWebhooks false)', () => {
  it('refuses loopback, private, link-local, shared and unspecified addresses, and names that resolve to them', async () => {
    const app = await t.make.application();
    const device = await t.make.device(app.principal);
    const cases: [string, string][] = [
      ['http://127.0.0.1:8080/hook', '127.0.0.1 is'],
      ['http://10.1.2.3/hook', '10.1.2.3 is'],
      ['http://169.254.169.254/latest/meta-data', '169.254.169.254 is'],
      ['http://[::1]:8080/hook', '::1 is'],
      ['http://localhost:8080/hook', 'localhost resolves to'],
      ['https://172.16.0.1/hook', '172.16.0.1 is'],
      ['https://192.168.1.10/hook', '192.168.1.10 is'],
      ['https://100.64.0.1/hook', '100.64.0.1 is'],
      ['http://0.0.0.0/hook', '0.0.0.0 is'],
      ['http://[fd00::1]/hook', 'fd00::1 is'],
      ['http://[fe80::1]/hook', 'fe80::1 is'],
      ['http://[::ffff:127.0.0.1]/hook', '::ffff:7f00:1 is'],
      ['http://2130706433/hook', '127.0.0.1 is'],
    ];
    for (const [url, start] of cases) {
      const res = await t.app.inject({
        method: 'POST', url: `/api/v1/devices/${device.id}/subscriptions`, headers: { authorization: app.auth },
        payload: { subscription: { eventType: 'startup', url } },
      });
      expect(res.statusCode, url).toBe(400);
      expect(res.json().message, url).toMatch(new RegExp(`^url is refused: ${start.replace(/[.[\]]/g, '\\$&')}`));
      expect(res.json().message).toContain('a loopback, private, link-local or otherwise non-public address; webhooks must reach public addresses');
    }
    expect(await t.db.knex('subscriptions').count({ n: '*' })).toEqual([{ n: 0 }]);
  });

  it('accepts a public address, and refuses a PUT that moves the subscription to a private one', async () => {
    const app = await t.make.application();
    const device = await t.make.device(app.principal);
    const res = await t.app.inject({
      method: 'POST', url: `/api/v1/devices/${device.id}/subscriptions`, headers: { authorization: app.auth },
      payload: { subscription: { eventType: 'startup', url: 'https://93.184.215.14/hook' } },
    });
    expect(res.statusCode).toBe(201);
    const put = await t.app.inject({
      method: 'PUT', url: `/api/v1/subscriptions/${res.json().subscription.id}`, headers: { authorization: app.auth },
      payload: { subscription: { url: 'http://192.168.0.1/admin' } },
    });
    expect(put.statusCode).toBe(400);
    expect(put.json().message).toMatch(/^url is refused: 192\.168\.0\.1 is a loopback/);
  });
});
