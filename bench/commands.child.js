// The commands scenario's bench client, in a process of its own (its CPU and event loop apart from the platform's):
// N devices connected over MQTT that answer every command at once (reply ok, QoS 1), and the sender of the commands —
// POSTs through the platform's API, or, for the bare baseline, QoS 1 publishes straight through a bare broker. Every
// time is this process's clock as epoch ms (sub-ms: performance.now() plus an offset), the clock PostgreSQL's now()
// also reads on this host. Driven over IPC: 'connect' → 'connected', 'post' → 'posted', 'publish' → 'published',
// 'disconnect' → 'disconnected', 'close' → exits.
// Plain JavaScript: child processes start outside tsx's loader.
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { performance } from 'node:perf_hooks';
import mqtt from 'mqtt';
import { Pool } from 'undici';
import { bounded, connectEach } from './load.common.js';

/** This process's peak RSS: VmHWM (Linux; resourceUsage().maxRSS keeps the forked image's), else maxRSS. */
function peakRss() {
  try {
    const kb = /^VmHWM:\s+(\d+) kB/m.exec(fs.readFileSync('/proc/self/status', 'utf8'));
    if (kb) return Number(kb[1]) * 1024;
  } catch { /* not Linux */ }
  return process.resourceUsage().maxRSS * 1024;
}

const epochOffset = Date.now() - performance.now();
const now = () => epochOffset + performance.now();

/** The devices connected now, and what each command did at them, by command id. */
let clients = [];
/** commandId → { arrivedAt, replyAckedAt, replyError } */
let seen = new Map();
let lastProgress = now();

/** Connects each device (at most `parallel` CONNECTs in flight) and subscribes it to its commands at QoS 1. */
async function connectAll(url, devices, parallel) {
  seen = new Map();
  const started = now();
  const { failed, firstError } = await connectEach(url, devices, parallel, async (client, device) => {
    const commands = `devices/${device.id}/commands`;
    const responses = `devices/${device.id}/responses`;
    client.on('message', (topic, payload) => {
      if (topic !== commands) return;
      const arrivedAt = now();
      let commandId;
      try { ({ commandId } = JSON.parse(payload.toString())); } catch { return; }
      if (typeof commandId !== 'string' || seen.has(commandId)) return; // a redelivery: answered once
      const entry = { arrivedAt, replyAckedAt: null, replyError: null };
      seen.set(commandId, entry);
      lastProgress = arrivedAt;
      client.publish(responses, JSON.stringify({ commandId, ok: true }), { qos: 1 }, (err) => {
        entry.replyAckedAt = now();
        lastProgress = entry.replyAckedAt;
        if (err) entry.replyError = err.message;
      });
    });
    await client.subscribeAsync(commands, { qos: 1 });
    clients.push(client);
  });
  return { type: 'connected', connected: clients.length, failed, firstError, ms: now() - started };
}

/** Resolves once `done()` holds, or once nothing moved for `idleMs` (what is missing stays missing). */
async function settle(done, idleMs) {
  while (!done() && now() - lastProgress < idleMs) await new Promise((r) => setTimeout(r, 20));
}

/**
 * One ping per device through the API (keep-alive connections, at most `inflight` POSTs at once); then waits until
 * each command's reply was acknowledged by the gateway (stored) or nothing moved for idleMs.
 */
async function post(m) {
  const pool = new Pool(m.apiUrl, { connections: m.inflight, pipelining: 1 });
  const body = JSON.stringify({ command: { type: 'ping' } });
  const headers = { authorization: m.authorization, 'content-type': 'application/json' };
  const posts = new Array(m.deviceIds.length);
  const statuses = {};
  let firstError = null;
  const cpu = process.cpuUsage();
  lastProgress = now();
  await bounded(m.deviceIds.length, m.inflight, async (i) => {
    const deviceId = m.deviceIds[i];
    const startedAt = now();
    let status = 'error', commandId = null;
    try {
      const r = await pool.request({ path: `/api/v1/devices/${deviceId}/commands`, method: 'POST', headers, body });
      status = r.statusCode;
      const text = await r.body.text();
      if (status === 201) commandId = JSON.parse(text).command.id;
      else firstError ??= `${status} ${text.slice(0, 200)}`;
    } catch (err) {
      firstError ??= err.message;
    }
    statuses[status] = (statuses[status] ?? 0) + 1;
    posts[i] = { deviceId, commandId, startedAt, answeredAt: now() };
    lastProgress = now();
  });
  const postedAt = now();
  const ids = posts.filter((p) => p.commandId).map((p) => p.commandId);
  await settle(() => ids.every((id) => seen.get(id)?.replyAckedAt != null), m.idleMs);
  await pool.close();
  const used = process.cpuUsage(cpu);
  return {
    type: 'posted', statuses, firstError, postedAt,
    commands: posts.map((p) => ({ ...p, ...(p.commandId && seen.get(p.commandId)) })),
    cpu: { user: used.user / 1e6, system: used.system / 1e6 }, maxRssBytes: peakRss(),
  };
}

/**
 * The bare baseline: a publisher publishes one QoS 1 command message per device to devices/<id>/commands (at most
 * `inflight` waiting for their PUBACK), each device replies on its responses topic, and the publisher, subscribed to
 * them all, takes each reply's arrival.
 */
async function publish(m) {
  const publisher = mqtt.connect(m.url, { clientId: `bench-publisher-${randomUUID()}`, reconnectPeriod: 0 });
  await new Promise((resolve, reject) => { publisher.once('connect', resolve); publisher.once('error', reject); });
  const replied = new Map();
  publisher.on('message', (_topic, payload) => {
    try {
      const { commandId } = JSON.parse(payload.toString());
      if (!replied.has(commandId)) { replied.set(commandId, now()); lastProgress = now(); }
    } catch { /* not a reply */ }
  });
  await publisher.subscribeAsync('devices/+/responses', { qos: 1 });
  const sent = new Array(m.deviceIds.length);
  let errors = 0;
  const cpu = process.cpuUsage();
  lastProgress = now();
  await bounded(m.deviceIds.length, m.inflight, (i) => new Promise((resolve) => {
    const commandId = randomUUID();
    const message = { commandId, type: 'ping', payload: null, expiresAt: new Date(Date.now() + 300_000).toISOString() };
    const startedAt = now();
    sent[i] = { commandId, startedAt, ackedAt: null };
    publisher.publish(`devices/${m.deviceIds[i]}/commands`, JSON.stringify(message), { qos: 1 }, (err) => {
      if (err) errors++;
      sent[i].ackedAt = now();
      lastProgress = now();
      resolve();
    });
  }));
  await settle(() => sent.every((s) => replied.has(s.commandId)), m.idleMs);
  const used = process.cpuUsage(cpu);
  await new Promise((resolve) => publisher.end(true, {}, resolve));
  return {
    type: 'published', errors,
    commands: sent.map((s) => ({ ...s, ...seen.get(s.commandId), repliedAt: replied.get(s.commandId) ?? null })),
    cpu: { user: used.user / 1e6, system: used.system / 1e6 },
  };
}

async function disconnectAll() {
  await Promise.all(clients.map((c) => new Promise((resolve) => c.end(true, {}, resolve))));
  clients = [];
}

// the bench process is gone (ended, or killed before it could say 'close'): so is this one
process.on('disconnect', () => process.exit(0));
process.on('message', async (m) => {
  try {
    if (m.type === 'connect') process.send(await connectAll(m.url, m.devices, m.parallel));
    else if (m.type === 'post') process.send(await post(m));
    else if (m.type === 'publish') process.send(await publish(m));
    else if (m.type === 'disconnect') { await disconnectAll(); process.send({ type: 'disconnected' }); }
    else if (m.type === 'close') { await disconnectAll(); process.exit(0); }
  } catch (err) {
    process.stderr.write(`commands.child: ${err.stack ?? err}\n`);
    process.exit(1);
  }
});
process.send({ type: 'ready' });
