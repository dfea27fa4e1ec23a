import type { App } from '../context.js';
import { serviceName } from '../../lib/services.js';

/**
 * Records every call an application makes. Like the original platform, 2xx and 4xx
 * answers are recorded, 3xx and 5xx are not. Written before the reply is
 * sent, so a caller that lists its transactions right after a call sees that call: the repository
 * buffers lines and writes them in batches, flushing before any read of the log and when the API closes.
 */
export function registerTransactionLog(app: App): void {
  app.addHook('onClose', async () => { await app.deps.repos.transactions.flush(); });
  app.addHook('onSend', async (request, reply, payload) => {
    const principal = request.principal;
    const service = request.routeOptions.config?.service;
    const status = reply.statusCode;
    if (!principal || !service || (status >= 300 && status < 400) || status >= 500) return payload;
    await app.deps.repos.transactions.record({
      applicationId: principal.id, timestamp: new Date(), path: request.url, statusCode: status,
      method: request.method, service: serviceName(app.deps.config.servicePrefix, service),
    });
    return payload;
  });
}
