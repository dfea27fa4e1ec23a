import { Counter, Gauge, Histogram, Registry } from 'prom-client';

/**
 * Prometheus metrics of one gateway. Each gateway has its own registry (not prom-client's global one),
 * so several can run in one process (tests) and /metrics joins the text of every part.
 */
export function createGatewayMetrics(source: { connectedClients(): number; queueDepth(): number }) {
  const registry = new Registry();
  const registers = [registry];
  return {
    registry,
    connected: new Gauge({
      name: 'drivewire_gateway_connected_devices', help: 'Authenticated MQTT connections', registers,
      collect() { this.set(source.connectedClients()); },
    }),
    payloads: new Counter({ name: 'drivewire_gateway_payloads_received_total', help: 'PUBLISH packets on a frames topic', registers }),
    received: new Counter({
      name: 'drivewire_gateway_frames_received_total',
      help: 'Frames received (a payload refused as a whole counts as one)', registers,
    }),
    stored: new Counter({ name: 'drivewire_gateway_frames_stored_total', help: 'Frames committed as telemetry messages', registers }),
    duplicates: new Counter({
      name: 'drivewire_gateway_frames_duplicate_total', help: 'Re-sent frames (same device and frame id) not stored again', registers,
    }),
    refused: new Counter({
      name: 'drivewire_gateway_frames_refused_total',
      help: 'Frames or payloads refused, by reason (rate_frames, rate_bytes: a QoS 0 payload over its device\'s rate limit, counted once)',
      labelNames: ['reason'], registers,
    }),
    delayed: new Counter({
      name: 'drivewire_gateway_payloads_delayed_total',
      help: 'Payloads over their device\'s rate limit or behind waiting ones, taken (and acknowledged) once within it, by reason: rate_frames, rate_bytes, queued',
      labelNames: ['reason'], registers,
    }),
    delaySeconds: new Counter({
      name: 'drivewire_gateway_payload_delay_seconds_total', help: 'Seconds QoS 1 payloads waited for their device\'s rate limit', registers,
    }),
    ignoredFields: new Counter({
      name: 'drivewire_gateway_frame_fields_ignored_total',
      help: 'Unknown fields in accepted frames, ignored, by field name (distinct names capped; the rest count as "other")',
      labelNames: ['field'], registers,
    }),
    connectionsRefused: new Counter({
      name: 'drivewire_gateway_connections_refused_total',
      help: 'MQTT connections refused or cut: packet_too_large, too_many_filters, connect_timeout, client_id, not_authorized',
      labelNames: ['reason'], registers,
    }),
    batchSize: new Histogram({
      name: 'drivewire_ingest_batch_size', help: 'Frames and dead letters per committed batch', registers,
      buckets: [1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000],
    }),
    commitSeconds: new Histogram({
      name: 'drivewire_ingest_commit_seconds', help: 'Time of one batch transaction, in seconds', registers,
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    }),
    stageSeconds: new Histogram({
      name: 'drivewire_ingest_stage_seconds',
      help: 'Time of one step of a batch transaction, in seconds: latest, insert, each stage by name, events, feed',
      labelNames: ['stage'], registers,
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
    }),
    batchFailures: new Counter({
      name: 'drivewire_ingest_batch_failures_total', help: 'Batch transactions that failed (their frames are retried alone)', registers,
    }),
    queueDepth: new Gauge({
      name: 'drivewire_ingest_queue_depth', help: 'Frames waiting for a batch', registers,
      collect() { this.set(source.queueDepth()); },
    }),
  };
}
export type GatewayMetrics = ReturnType<typeof createGatewayMetrics>;

/**
 * A short label for a refusal reason (the full text goes to the dead-letter table): the decoder's reasons
 * read "frame N: <field> ..." or "payload ...", so the field names the category.
 */
export function reasonLabel(reason: string): string {
  if (/^payload of \d+ bytes exceeds/.test(reason)) return 'oversize';
  if (/^payload is not (JSON|valid UTF-8)/.test(reason)) return 'not_json';
  if (reason.startsWith('payload')) return 'not_a_frame';
  const field = /^frame \d+: (?:unknown field|([A-Za-z]+))/.exec(reason);
  if (!field) return 'other';
  if (field[1] === undefined) return 'unknown_field';
  const labels: Record<string, string> = {
    ts: 'ts', location: 'location', pids: 'pid', data: 'value', value: 'value', accel: 'accel', vin: 'vin', dtcs: 'dtcs',
    battery: 'battery', collision: 'collision', kind: 'kind', id: 'id', must: 'not_a_frame', storage: 'storage',
    nests: 'too_deep',
  };
  return labels[field[1]] ?? 'other';
}
