// Load generator for `drivewire simulate`: many devices, each a real MQTT client publishing
// frames (QoS 1) at a fixed rate for a fixed time; counts what was sent, acknowledged and failed.
import { connectAsync, type MqttClient } from 'mqtt';
import { buildRunFrames, type GatewayFrame } from './frames.js';
import type { StoredRoute } from './route.js';
import { randomVin } from './runs.js';

export interface LoadOptions {
  mqttUrl: string;
  devices: { id: string; secret: string }[];
  route: StoredRoute;
  /** frames per second per device */ rateHz: number;
  durationMs: number;
  /** ms to wait for the last acknowledgements after the end */ drainMs?: number;
  connectTimeoutMs?: number;
}

export interface LoadResult {
  devices: number;
  connected: number;
  /** Devices that could not connect; the first reason. */ connectFailures: number;
  firstConnectError: string | null;
  sent: number;
  acknowledged: number;
  /** Frames refused or not acknowledged within the drain time. */ failed: number;
  /** ms from the first publish to the last acknowledgement. */ elapsedMs: number;
  /** ms publish → PUBACK */ latencyP50: number | null;
  latencyP99: number | null;
}

const TICK_MS = 20;

interface Sim { id: string; client: MqttClient; next: number; templates: GatewayFrame[]; runId: string }

async function connectAll(o: LoadOptions) {
  const templates = buildRunFrames(o.route, { vin: randomVin(), runId: 'template' }).map((f) => f.frame);
  const results = await Promise.allSettled(o.devices.map((d) => connectAsync(o.mqttUrl, {
    clientId: d.id, username: d.id, password: d.secret, reconnectPeriod: 0, connectTimeout: o.connectTimeoutMs ?? 10_000,
  })));
  const sims: Sim[] = [];
  let firstError: string | null = null;
  results.forEach((r, i) => {
    if (r.status === 'fulfilled') sims.push({ id: o.devices[i].id, client: r.value, next: 0, templates, runId: `load-${Date.now()}-${i}` });
    else firstError ??= (r.reason as Error).message;
  });
  return { sims, firstError };
}

/** The n-th frame of a device: the startup frame first, then the route's telemetry frames in a loop, stamped now. */
function frameAt(sim: Sim, n: number): GatewayFrame {
  const telemetry = sim.templates.length - 2;
  const template = n === 0 ? sim.templates[0] : sim.templates[1 + ((n - 1) % telemetry)];
  const { vin, battery, ...rest } = template;
  return { ...(n === 0 ? { vin, battery } : {}), ...rest, id: `${sim.runId}-${n}`, ts: Date.now() };
}

export async function runLoad(o: LoadOptions): Promise<LoadResult> {
  const { sims, firstError } = await connectAll(o);
  const stats = { sent: 0, acknowledged: 0 };
  const latencies: number[] = [];
  const acks: Promise<void>[] = [];
  const start = Date.now();
  let lastAck = start;
  const publish = (sim: Sim) => {
    const frame = frameAt(sim, sim.next++);
    const at = Date.now();
    stats.sent += 1;
    acks.push(sim.client.publishAsync(`devices/${sim.id}/frames`, JSON.stringify(frame), { qos: 1 }).then(
      () => { stats.acknowledged += 1; lastAck = Date.now(); latencies.push(lastAck - at); },
      () => undefined, // counted below: every frame not acknowledged is a failure
    ));
  };
  while (Date.now() - start < o.durationMs) {
    const owed = Math.floor(((Date.now() - start) / 1000) * o.rateHz) + 1;
    for (const sim of sims) while (sim.next < owed) publish(sim);
    await new Promise((r) => setTimeout(r, TICK_MS));
  }
  await Promise.race([Promise.all(acks), new Promise((r) => setTimeout(r, o.drainMs ?? 10_000).unref())]);
  const { sent, acknowledged } = stats;
  await Promise.all(sims.map((s) => s.client.endAsync(true).catch(() => undefined)));
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => (latencies.length ? latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] : null);
  return {
    devices: o.devices.length, connected: sims.length, connectFailures: o.devices.length - sims.length, firstConnectError: firstError,
    sent, acknowledged, failed: sent - acknowledged, elapsedMs: lastAck - start, latencyP50: pct(0.5), latencyP99: pct(0.99),
  };
}
