import type { TestApp } from '../helpers/app.js';

/** The rules tests' requests against `t()` (the test app, built in beforeAll): a new application with a device, a rule's POST, a GET. */
export function rulesRequests(t: () => TestApp) {
  return {
    async setup() {
      const app = await t().make.application();
      const device = await t().make.device(app.principal);
      return { app, device };
    },
    post: (auth: string, deviceId: string, rule: unknown) =>
      t().app.inject({ method: 'POST', url: `/api/v1/devices/${deviceId}/rules`, headers: { authorization: auth }, payload: { rule } }),
    get: (auth: string, url: string) => t().app.inject({ method: 'GET', url, headers: { authorization: auth } }),
  };
}
