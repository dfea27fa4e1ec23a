import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => { t = await buildTestApp(); });
afterAll(async () => { await t?.close(); });

describe('smoke', () => {
  it('lists devices', async () => {
    const app = await t.make.application();
    await t.make.device(app.principal);
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/devices', headers: { authorization: app.auth } });
    expect(res.statusCode).toBe(200);
    console.log(res.body);
  });
});
