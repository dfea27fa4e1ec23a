// A frame with an unknown field is not refused whole: firmware adds fields before the platform knows them.
// Unknown fields are ignored and counted per field, with bounded labels.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { connectedDevice, metric, ts } from './mqtt.helpers.js';
import { storedMessages } from '../helpers/telemetry.factory.js';
import { slotOf } from '../../db/message-data.sql.js';

let g: TestGateway;
beforeAll(async () => { g = await startTestGateway(); });
afterAll(async () => { await g?.close(); });

const ignored = (field: string) => metric(g, `drivewire_gateway_frame_fields_ignored_total{field="${field}"}`);

describe('unknown frame fields', () => {
  it('stores a frame carrying unknown fields without them, counts each field, and caps the distinct labels', async () => {
    const dev = await connectedDevice(g);
    const [fw, fix] = [await ignored('firmwareBuild'), await ignored('location.fix')];
    await dev.publish(JSON.stringify([
      { ts: ts(), data: { rpm: 800 }, firmwareBuild: '2.1.7', location: { lat: 1, lon: 2, fix: '3d' } },
      { ts: ts(), data: { rpm: 900 }, firmwareBuild: '2.1.7' },
    ]));
    expect(await dev.storedRpm()).toEqual([800, 900]);
    expect(await dev.letters()).toEqual([]);
    const [row] = await storedMessages(g.t.db.knex).where('device_id', dev.d.id).whereRaw(`num[${slotOf('rpm')}] = 800`);
    expect(row.data).toEqual({ rpm: 800, location: { type: 'Point', coordinates: [2, 1] } });
    expect(await ignored('firmwareBuild')).toBe(fw + 2);
    expect(await ignored('location.fix')).toBe(fix + 1);

    // 200 distinct names (and one that is no identifier): at most 50 labels, the rest under "other".
    const many = Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`f${i}`, i]));
    await dev.publish(JSON.stringify({ ts: ts(), data: { rpm: 1000 }, ...many, 'a "b"\n': 1 }));
    expect(await dev.storedRpm()).toEqual([800, 900, 1000]);
    const labels = (await g.gw.metrics()).split('\n').filter((l) => l.startsWith('drivewire_gateway_frame_fields_ignored_total{'));
    expect(labels.length).toBeLessThanOrEqual(51);
    expect(await ignored('other')).toBeGreaterThanOrEqual(151);
    expect(dev.client.connected).toBe(true);
  });
});
