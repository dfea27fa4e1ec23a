// The connections scenario's bare baseline: a bare Aedes (no authentication, no storage)
// alone in a process of its own, so the RSS it adds per idle connection is not blurred by memory the
// platform freed before it in the bench process. Driven over IPC: 'memory' → 'memory', 'close' → exits.
// Started with --expose-gc, so each memory reading follows a full collection.
// Plain JavaScript: child processes start outside tsx's loader.
import net from 'node:net';
import { Aedes } from 'aedes';

const broker = await Aedes.createBroker();
const server = net.createServer(broker.handle);
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));

// the bench process is gone (ended, or killed before it could say 'close'): so is this one
process.on('disconnect', () => process.exit(0));
process.on('message', (m) => {
  if (m.type === 'memory') {
    globalThis.gc?.();
    const { rss, heapUsed, heapTotal } = process.memoryUsage();
    process.send({ type: 'memory', rss, heapUsed, heapTotal, connected: broker.connectedClients });
  } else if (m.type === 'close') {
    broker.close(() => server.close(() => process.exit(0)));
  }
});
process.send({ type: 'ready', url: `mqtt://127.0.0.1:${server.address().port}` });
