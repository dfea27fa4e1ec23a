// The connections scenario's load process: opens one idle MQTT connection per device and
// holds them. A child process, not a worker thread: its sockets then count against its own file
// descriptor limit, and its memory is not in the RSS of the process whose per-device RSS is measured.
// Driven over IPC: 'connect' → 'connected', 'status' → 'status', 'close' → exits.
// Plain JavaScript: child processes start outside tsx's loader.
import fs from 'node:fs';
import { performance } from 'node:perf_hooks';
import { connectEach } from './load.common.js';

/**
 * This process's peak RSS: VmHWM (Linux), which starts afresh at exec; resourceUsage().maxRSS elsewhere,
 * which on Linux keeps the high-water mark of the process image this child was forked from.
 */
function peakRss() {
  try {
    const kb = /^VmHWM:\s+(\d+) kB/m.exec(fs.readFileSync('/proc/self/status', 'utf8'));
    if (kb) return Number(kb[1]) * 1024;
  } catch { /* not Linux */ }
  return process.resourceUsage().maxRSS * 1024;
}

const clients = [];
let holding = false;
let dropped = 0;

/** At most `parallel` connection attempts in flight: a bounded stream of CONNECTs, not N at once. */
async function connectAll(url, devices, parallel) {
  const cpu = process.cpuUsage();
  const started = performance.now();
  let connected = 0;
  const { failed, firstError } = await connectEach(url, devices, parallel, async (client) => {
    client.once('close', () => { if (holding) dropped++; });
    clients.push(client);
    connected++;
  });
  const ms = performance.now() - started;
  holding = true;
  const used = process.cpuUsage(cpu);
  return {
    type: 'connected', ms, connected, failed, firstError,
    cpu: { user: used.user / 1e6, system: used.system / 1e6 }, maxRssBytes: peakRss(),
  };
}

// the bench process is gone (ended, or killed before it could say 'close'): so is this one
process.on('disconnect', () => process.exit(0));
process.on('message', async (m) => {
  if (m.type === 'connect') process.send(await connectAll(m.url, m.devices, m.parallel));
  else if (m.type === 'status') process.send({ type: 'status', open: clients.length - dropped, dropped });
  else if (m.type === 'close') {
    holding = false;
    await Promise.all(clients.map((c) => new Promise((resolve) => c.end(true, {}, resolve))));
    process.exit(0);
  }
});
process.send({ type: 'ready' });
