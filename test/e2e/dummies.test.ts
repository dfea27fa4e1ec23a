// End to end: the platform in-process (API + gateway + workers), a dummy created through the API,
// a run on a stored route at speed 20, and the telemetry read back through the API.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lib/config.js';
import { silentLogger } from '../../lib/logger.js';
import { startPlatform, type Platform } from '../../bin/platform.js';
import { haversineM, type LonLat } from '../../simulator/geo.js';
import { decodeRoute, loadStoredRoutes } from '../../simulator/route.js';
import { createTestDb } from '../helpers/db.js';

const BACK_HOME = (await loadStoredRoutes()).find((r) => r.name === 'DFW - Back Home')!;
const VIN = 'VV4E2E5TEST000001';

let db: Awaited<ReturnType<typeof createTestDb>>;
let dataDir: string;
let p: Platform;
let auth: string;
beforeAll(async () => {
  db = await createTestDb();
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-e2e-dummies-'));
  p = await startPlatform(loadConfig({ httpPort: 0, mqttPort: 0, host: '127.0.0.1', mqttHost: '127.0.0.1', dataDir, logLevel: 'silent' }, {}),
    silentLogger, { db });
  const app = p.credentials.application;
  auth = `Basic ${Buffer.from(`${app.id}:${app.secret}`).toString('base64')}`;
});
afterAll(async () => { await p?.close(); await db?.close(); fs.rmSync(dataDir, { recursive: true, force: true }); });

async function api(method: string, url: string, body?: unknown) {
  const res = await fetch(url.startsWith('http') ? url : `${p.apiUrl}${url}`, {
    method, headers: { authorization: auth, ...(body ? { 'content-type': 'application/json' } : {}) }, body: body ? JSON.stringify(body) : undefined,
  });
  return { status: res.status, body: res.status === 204 ? null : await res.json() };
}

/** Every message of the device, oldest first, by walking the `prior` links. */
async function allMessages(deviceId: string) {
  const out: { timestamp: string; data: { location?: { coordinates: LonLat } } }[] = [];
  let url: string | undefined = `/api/v1/devices/${deviceId}/messages?limit=50`;
  while (url) {
    const page = await api('GET', url);
    expect(page.status).toBe(200);
    out.push(...page.body.messages);
    url = page.body.meta.pagination.links.prior;
  }
  return out.reverse();
}

describe('a dummy driven along a stored route, end to end', () => {
  it('reports starting → running → no run, and the telemetry API returns the route', async (ctx) => {
    if (!p.parts.some((part) => part.urls?.mqtt)) ctx.skip(); // the gateway part is not registered in PART_STARTERS yet
    const { body: { dummy } } = await api('POST', '/api/v1/dummies', { dummy: { name: 'e2e' } });
    const created = await api('POST', `/api/v1/dummies/${dummy.id}/runs`, { run: { vin: VIN, routeId: BACK_HOME.id, speed: 20 } });
    expect(created.status).toBe(201);
    const states: string[] = [];
    const started = Date.now();
    for (let current = created.body.run; current; current = (await api('GET', `/api/v1/dummies/${dummy.id}/runs/_current`)).body.run) {
      if (states.at(-1) !== current.status.state) states.push(current.status.state);
      if (Date.now() - started > 20_000) throw new Error(`run still ${current.status.state} after 20 s`);
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(states).toEqual(['starting', 'running']);
    const { body: { run } } = await api('GET', `/api/v1/dummies/${dummy.id}/runs/${created.body.run.id}`);
    expect(run.status).toMatchObject({ state: 'finished', outcome: 'completed', remainingMessages: 0 });

    const messages = await allMessages(dummy.deviceId);
    expect(messages).toHaveLength(run.status.framesSent);
    const positions = messages.flatMap((m) => (m.data.location ? [m.data.location.coordinates] : []));
    expect(positions).toHaveLength(messages.length);
    const { coordinates } = decodeRoute(BACK_HOME);
    const [startOff, endOff] = [haversineM(positions[0], coordinates[0]), haversineM(positions.at(-1)!, coordinates.at(-1)!)];
    expect(startOff).toBeLessThan(30);
    expect(endOff).toBeLessThan(30);
    const gps = positions.slice(1).reduce((sum, pos, i) => sum + haversineM(positions[i], pos), 0);
    expect(Math.abs(gps / BACK_HOME.distanceByGPS - 1)).toBeLessThan(0.02);
    const span = Date.parse(messages.at(-1)!.timestamp) - Date.parse(messages[0].timestamp);
    expect(Math.abs(span / BACK_HOME.duration - 1)).toBeLessThan(0.05);
    expect(Date.parse(messages[0].timestamp)).toBeGreaterThanOrEqual(Date.parse(created.body.run.status.createdAt) - 1000);
    ctx.annotate(`messages ${messages.length}, GPS distance ${gps.toFixed(1)} m (route ${BACK_HOME.distanceByGPS} m, `
      + `${((gps / BACK_HOME.distanceByGPS - 1) * 100).toFixed(2)} %), duration ${span} ms (route ${BACK_HOME.duration} ms, `
      + `${((span / BACK_HOME.duration - 1) * 100).toFixed(2)} %), first/last ${startOff.toFixed(2)}/${endOff.toFixed(2)} m from the polyline ends`);
  });
});
