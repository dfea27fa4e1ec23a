// Commands end to end: the whole platform in process, dummies driving a stored route over real MQTT, commands sent
// with the real `drivewire devices command` binary and through the API, and a command-expired webhook at a real
// HTTP receiver (docs/concepts/commands-and-presence.md).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadStoredRoutes } from '../../simulator/route.js';
import { startE2ePlatform, type E2ePlatform } from '../helpers/e2e.js';
import { runCli } from '../helpers/cli.js';
import { waitFor } from '../workers/receiver.js';

const BACK_HOME = (await loadStoredRoutes()).find((r) => r.name === 'DFW - Back Home')!;
const VIN = 'VV4E2E5CMD0000001';

let e: E2ePlatform;
beforeAll(async () => { e = await startE2ePlatform({ receiver: true }); });
afterAll(async () => { await e?.close(); });

const cli = (args: string[]) => runCli(['devices', 'command', ...args, '--data-dir', e.dataDir, '--api-url', e.p.apiUrl], {}, 60_000);

/** A dummy on a run at `speed`, once its device is connected (online). */
async function driving(name: string, run: Record<string, unknown>) {
  const { body: { dummy } } = await e.api('POST', '/api/v1/dummies', { dummy: { name } });
  expect((await e.api('POST', `/api/v1/dummies/${dummy.id}/runs`, { run: { vin: VIN, routeId: BACK_HOME.id, ...run } })).status).toBe(201);
  await waitFor(async () => (await e.api('GET', `/api/v1/devices/${dummy.deviceId}`)).body.device.status.online || undefined, 'the dummy online', 60_000);
  return dummy as { id: string; deviceId: string };
}

/** The device's telemetry timestamps (ms), oldest first. */
async function telemetryTimes(deviceId: string): Promise<number[]> {
  const out: number[] = [];
  let url: string | undefined = `/api/v1/devices/${deviceId}/messages?limit=100`;
  while (url) {
    const page = await e.api('GET', url);
    out.push(...page.body.messages.map((m: { timestamp: string }) => Date.parse(m.timestamp)));
    url = page.body.meta.pagination.links.prior;
  }
  return out.reverse();
}

describe('commands to a dummy on a run', () => {
  it('answers set-interval 5 through the CLI, and its next frames come 5 s apart in its timeline; request-vin gets the run\'s VIN', async () => {
    const dummy = await driving('cmd-interval', { speed: 10 });
    const set = await cli(['cmd-interval', 'set-interval', '--payload', '{"seconds":5}', '--wait']);
    expect(set.stderr).toBe('');
    expect(set.code).toBe(0);
    const lines = set.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^Command [0-9a-f-]{36} \(set-interval\) to /);
    expect(lines.slice(1).map((l) => l.split(/\s+/)[1])).toEqual(['queued', 'sent', 'delivered', 'succeeded']);
    expect(lines.at(-1)).toContain('{"seconds":5}');
    const since = (await telemetryTimes(dummy.deviceId)).length;
    const times = await waitFor(async () => {
      const t = await telemetryTimes(dummy.deviceId);
      return t.length >= since + 5 ? t : undefined;
    }, 'five frames after the reply', 50_000);
    const gaps = times!.slice(since).map((t, i, a) => (i ? t - a[i - 1] : null)).slice(1);
    expect(gaps.length).toBeGreaterThanOrEqual(4);
    for (const gap of gaps) expect(gap).toBe(5000);

    const vin = await cli([dummy.deviceId, 'request-vin', '--wait', '--json']);
    expect(vin.code).toBe(0);
    expect(JSON.parse(vin.stdout)).toMatchObject({ state: 'succeeded', response: { ok: true, result: { vin: VIN } } });
  }, 90_000); // four CLI starts, each seconds of CPU, and a drive's frames, on a loaded machine

  it('expires a command an unresponsive dummy never answers, and the command-expired webhook arrives', async () => {
    const dummy = await driving('cmd-unresponsive', { speed: 5, scenarios: ['unresponsive'] });
    const sub = await e.api('POST', `/api/v1/devices/${dummy.deviceId}/subscriptions`, { subscription: { eventType: 'command-expired', url: `${e.receiver!.base}/ok/expired` } });
    expect(sub.status).toBe(201);
    const out = await cli(['cmd-unresponsive', 'ping', '--expires-in', '2', '--wait']);
    expect(out.code).toBe(1);
    expect(out.stdout.trim().split('\n').slice(1).map((l) => l.split(/\s+/)[1])).toEqual(['queued', 'sent', 'delivered', 'expired']);
    expect(out.stderr).toMatch(/Command [0-9a-f-]{36} expired/);
    const hook = await waitFor(() => e.receiver!.received.find((r) => r.path === '/ok/expired'), 'the command-expired webhook');
    const body = JSON.parse(hook!.body);
    expect(body.notification.event).toMatchObject({ eventType: 'command-expired', deviceId: dummy.deviceId, object: { type: 'command' }, meta: { type: 'ping' } });
  });

  it('refuses a bad payload with the API\'s message and sends nothing', async () => {
    const dummy = await driving('cmd-bad', { speed: 5 });
    const out = await cli(['cmd-bad', 'set-interval', '--payload', '{"seconds":0}']);
    expect(out.code).toBe(1);
    expect(out.stderr).toMatch(/command\.payload\.seconds must be an integer from 1 to 3600/);
    const notJson = await cli(['cmd-bad', 'custom', '--payload', '{oops']);
    expect(notJson.stderr).toMatch(/--payload must be JSON/);
    expect((await e.api('GET', `/api/v1/devices/${dummy.deviceId}/commands`)).body.commands).toEqual([]);
  });
});
