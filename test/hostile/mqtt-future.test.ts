// A frame stamped minutes ahead would be stored as the device's newest, and the device's real frames that follow
// would be late ones until real time passed it. The gateway takes a frame at most
// maxFutureSkewMs (default 60 s) ahead of its clock, and refuses one further ahead as any other bad frame. A dummy's
// device, whose runs stamp ahead of the wall clock at a speed factor, may lead by dummyMaxLeadMs.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { connectedDevice, metric } from './mqtt.helpers.js';
import { createDummy } from '../../api/modules/dummies/dummies.service.js';
import { storedMessages } from '../helpers/telemetry.factory.js';

let g: TestGateway;
let strict: TestGateway;
beforeAll(async () => { [g, strict] = await Promise.all([startTestGateway(), startTestGateway({ maxFutureSkewMs: 2000 })]); });
afterAll(async () => { await Promise.all([g?.close(), strict?.close()]); });

const ahead = (ms: number) => new Date(Date.now() + ms).toISOString();
const tsRefusals = (gw: TestGateway) => metric(gw, 'drivewire_gateway_frames_refused_total{reason="ts"}');

describe('frames stamped ahead of the gateway\'s clock', () => {
  it('refuses a frame 4 min 59 s ahead with its reason, counted, and stores the frames around it', async () => {
    const dev = await connectedDevice(g);
    const before = await tsRefusals(g);
    const future = ahead(299_000);
    await dev.publish(JSON.stringify([{ ts: ahead(-1000), data: { rpm: 1 } }, { ts: future, data: { rpm: 2 } }, { ts: ahead(30_000), data: { rpm: 3 } }]));
    expect(await dev.storedRpm()).toEqual([1, 3]);
    const [letter] = await dev.letters();
    expect(letter.frameIndex).toBe(1);
    expect(letter.reason).toMatch(new RegExp(`^frame 1: ts ${future.replace(/[.]/g, '\\.')} is more than 60 s ahead of the gateway's clock \\(\\d{4}-.*Z\\)$`));
    expect(await tsRefusals(g)).toBe(before + 1);
  });

  it("lets a dummy's device stamp up to dummyMaxLeadMs ahead (its runs stamp ahead at a speed factor), no further", async () => {
    const app = await g.t.make.application();
    const dummy = await createDummy({ db: g.t.db, repos: g.t.repos }, app.principal, 'ahead');
    const { secret } = (await g.t.repos.dummies.device(dummy.id))!;
    const client = await g.connect({ id: dummy.deviceId, secret });
    const far = ahead(g.t.config.dummyMaxLeadMs + 60_000);
    await client.publishAsync(`devices/${dummy.deviceId}/frames`, JSON.stringify([
      { ts: ahead(3_600_000), data: { rpm: 1 } }, { ts: ahead(g.t.config.dummyMaxLeadMs - 60_000), data: { rpm: 2 } }, { ts: far, data: { rpm: 3 } },
    ]), { qos: 1 });
    const stored = await storedMessages(g.t.db.knex).where('device_id', dummy.deviceId).orderBy('ts');
    expect(stored.map((r) => r.data.rpm)).toEqual([1, 2]);
    const [letter] = await g.t.repos.ingest.deadLetters(dummy.deviceId);
    expect(letter.reason).toContain(`ts ${far} is more than ${g.t.config.dummyMaxLeadMs / 1000} s ahead of the gateway's clock`);
  });

  it('takes the allowed skew from its setting', async () => {
    const dev = await connectedDevice(strict);
    await dev.publish(JSON.stringify([{ ts: ahead(0), data: { rpm: 1 } }, { ts: ahead(10_000), data: { rpm: 2 } }]));
    expect(await dev.storedRpm()).toEqual([1]);
    expect((await dev.letters())[0].reason).toContain('is more than 2 s ahead of the gateway\'s clock');
  });
});
