// The flooding device of the noisy-neighbour scenario (flood.bench.js), on its own thread: one device publishing QoS 0
// arrays of `arrayFrames` frames as fast as its connection takes them (a few payloads handed to the socket at a time,
// the next one as each is written), until told to stop. Frames are stamped with the time they are built (the frames
// of a payload share a millisecond; their ids differ), so a long flood does not run ahead of the clock.
// Plain JavaScript: worker threads start outside tsx's loader.
import { performance } from 'node:perf_hooks';
import { parentPort, workerData } from 'node:worker_threads';
import { connect, cpuSince, frameBody, threadCpu } from './load.common.js';

const { url, device, arrayFrames, deviceIndex } = workerData;
/** Payloads handed to the client at a time (the next one as each is written). */
const WRITING = 8;

const client = await connect(url, device);
const topic = `devices/${device.id}/frames`;
let stopping = false;
let seq = 0;
let payloads = 0;
let bytes = 0;
let errors = 0;
let disconnects = 0;
client.on('close', () => { if (!stopping) disconnects++; });
let cpuAtStart = null;

function payload() {
  const ts = Date.now();
  return JSON.stringify(Array.from({ length: arrayFrames }, () => frameBody(deviceIndex, seq++, ts)));
}

function send() {
  if (stopping || !client.connected) return;
  const body = payload();
  payloads++;
  bytes += Buffer.byteLength(body);
  client.publish(topic, body, { qos: 0 }, (err) => {
    if (err && !stopping) errors++;
    // not at once: the client calls back on the same tick when the socket takes the write, and a loop of those would
    // never let this thread read the bench's 'stop'
    setImmediate(send);
  });
}

// Stopped with a reset: the kernel buffers hold megabytes of the flood that the gateway, which reads a paused device
// at about its limit, would go on reading for many seconds after a graceful end.
parentPort.on('message', (m) => {
  if (m.type !== 'stop') return;
  stopping = true;
  const cpu = cpuSince(cpuAtStart);
  const seconds = (performance.now() - started) / 1000;
  client.stream.resetAndDestroy();
  client.end(true);
  parentPort.postMessage({ type: 'stopped', payloads, frames: payloads * arrayFrames, bytes, errors, disconnects, cpu, seconds });
});

cpuAtStart = threadCpu();
const started = performance.now();
for (let i = 0; i < WRITING; i++) send();
parentPort.postMessage({ type: 'flooding' });
