import { Writable } from 'node:stream';
import { createLogger } from '../../lib/logger.js';
import { describe, expect, it } from 'vitest';
import { createGatewayMetrics } from '../../gateway/metrics.js';
import { createIgnoredFieldsTracker } from '../../gateway/ignored-fields.js';

describe('ignored frame fields', () => {
  it('logs the unknown fields once per device and counts every occurrence', async () => {
    const lines: { deviceId: string; fields: string[] }[] = [];
    const sink = new Writable({ write(chunk, _e, done) { lines.push(JSON.parse(String(chunk))); done(); } });
    const metrics = createGatewayMetrics({ connectedClients: () => 0, queueDepth: () => 0 });
    const tracker = createIgnoredFieldsTracker(metrics, createLogger('info', sink));
    tracker.note('dev-a', ['speed', 'fw']);
    tracker.note('dev-a', ['speed']);
    tracker.note('dev-b', []);
    tracker.note('dev-b', ['speed']);
    await new Promise((r) => setImmediate(r));
    expect(lines.map((l) => [l.deviceId, l.fields])).toEqual([['dev-a', ['speed', 'fw']], ['dev-b', ['speed']]]);
    const text = await metrics.registry.metrics();
    expect(text).toContain('drivewire_gateway_frame_fields_ignored_total{field="speed"} 3');
    expect(text).toContain('drivewire_gateway_frame_fields_ignored_total{field="fw"} 1');
  });
});
