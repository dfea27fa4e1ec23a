import type { Repositories } from '../../db/index.js';
import { basic } from './app.js';

/** Small factories: each test makes its own rows. */
export function factories(repos: Repositories) {
  let n = 0;
  return {
    async application(kind: 'enterprise' | 'consumer' = 'enterprise') {
      const a = await repos.applications.create({ name: `app ${++n}`, kind });
      return { ...a, auth: basic(a.id, a.secret), principal: { id: a.id, kind } as const };
    },
    /** A provisioned device, authorized for `app` and (Enterprise) registered with it. */
    async device(app?: { id: string; kind: 'enterprise' | 'consumer' }, opts: { register?: boolean; name?: string } = {}) {
      const owner = await repos.devices.createOwner({ name: `owner ${++n}` });
      const { device, secret } = await repos.devices.provision({ name: opts.name ?? `device ${n}`, ownerId: owner.id });
      if (app) {
        await repos.devices.authorize(device.id, app.id);
        if (app.kind === 'enterprise' && opts.register !== false) await repos.devices.register(app.id, device.id);
      }
      return { ...device, secret };
    },
  };
}
