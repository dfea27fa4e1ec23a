// The receiver of the webhooks and rules scenarios: an HTTP server on loopback, port 0, in a process of its
// own, so what it costs is in neither the platform's CPU nor the bare client's. Answers every POST 204 and counts them,
// and the distinct notification ids among them (a duplicate delivery shows as fewer ids than posts).
// With `timing` (the rules scenario) it also reads each body's `notification.event.timestamp` and notes, per webhook,
// that time and the ms from it to the webhook's arrival. With `hang` (the neighbours scenario's noisy tenant) it counts
// every POST and never answers one.
// Driven over IPC: { type: 'expect', n } → { type: 'reached', posts, ids, cpu } once n posts arrived;
// 'collect' → { type: 'collected', posts, ids, latencies, eventTimes, first, last } (arrivals' epoch ms);
// 'reset' clears the counts (→ 'reset'); 'close' → exits. Plain JavaScript: child processes start outside tsx's loader.
import http from 'node:http';

const ID_HEADER = process.argv[2] ?? 'x-notification-id';
const timing = process.argv[3] === 'timing';
const hang = process.argv[3] === 'hang';
let posts = 0;
let ids = new Set();
let expected = Infinity;
let latencies = [];
let eventTimes = [];
let first = 0;
let last = 0;

const report = () => {
  if (posts < expected) return;
  expected = Infinity;
  process.send({ type: 'reached', posts, ids: ids.size, cpu: process.cpuUsage() });
};

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => { if (timing) chunks.push(c); });
  req.on('end', () => {
    const now = Date.now();
    posts++;
    first ||= now;
    last = now;
    const id = req.headers[ID_HEADER];
    if (typeof id === 'string') ids.add(id);
    if (timing) {
      // from when the platform could first know of the event: its message's time, or for an event that waited for a
      // dwell the end of the dwell (its time is when the device crossed, `dwellSeconds` earlier)
      const { event } = JSON.parse(Buffer.concat(chunks).toString('utf8')).notification;
      const message = Date.parse(event.meta?.message?.timestamp ?? event.timestamp);
      const ts = Math.max(message, Date.parse(event.timestamp) + (event.meta?.dwellSeconds ?? 0) * 1000);
      latencies.push(now - ts);
      eventTimes.push(ts);
    }
    if (!hang) res.writeHead(204).end();
    report();
  });
});
server.keepAliveTimeout = 60_000;
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));

// the bench process is gone (ended, or killed before it could say 'close'): so is this one
process.on('disconnect', () => process.exit(0));
process.on('message', (m) => {
  if (m.type === 'expect') { expected = m.n; report(); }
  else if (m.type === 'collect') process.send({ type: 'collected', posts, ids: ids.size, latencies, eventTimes, first, last });
  else if (m.type === 'reset') {
    posts = 0; ids = new Set(); expected = Infinity; latencies = []; eventTimes = []; first = last = 0;
    process.send({ type: 'reset' });
  }
  else if (m.type === 'close') { server.closeAllConnections(); server.close(() => process.exit(0)); }
});
process.send({ type: 'ready', url: `http://127.0.0.1:${server.address().port}/hook` });
