import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => { t = await buildTestApp(); });
afterAll(async () => { await t?.close(); });

describe('device provisioning', () => {
  it('draws another case id when the one it drew is taken, inside the caller\'s transaction', async () => {
    const owner = await t.repos.devices.createOwner({ name: 'case ids' });
    const first = await t.repos.devices.provision({ name: 'first', ownerId: owner.id, caseId: 'VVTAKEN' });
    expect(first.device.caseId).toBe('VVTAKEN');
    const second = await t.db.knex.transaction(async (trx) => {
      const d = await t.repos.devices.provision({ name: 'second', ownerId: owner.id, caseId: 'VVTAKEN' }, trx);
      // the transaction is still usable after the clash
      await t.repos.devices.provision({ name: 'third', ownerId: owner.id }, trx);
      return d;
    });
    expect(second.device.caseId).toMatch(/^VV[A-Z0-9]{5}$/);
    expect(second.device.caseId).not.toBe('VVTAKEN');
    const stored = await t.db.knex('devices').where({ owner_id: owner.id }).orderBy('name').select('name', 'case_id');
    expect(stored.map((r: any) => r.name)).toEqual(['first', 'second', 'third']);
    expect(new Set(stored.map((r: any) => r.case_id)).size).toBe(3);
  });
});
