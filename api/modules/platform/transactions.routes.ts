import type { App } from '../../context.js';
import { Type } from 'typebox';
import { errorResponses, StreamQuery } from '../../schemas/common.js';
import { parseStreamWindow, streamMeta } from '../../plugins/pagination.js';
import { TransactionList } from './platform.schemas.js';

/** The calling application's transaction log (api/plugins/transactions.ts records it). */
export default async function transactionsRoutes(app: App) {
  const { repos } = app.deps;
  app.get('/api/v1/transactions', {
    config: { service: 'platform' },
    schema: {
      tags: ['platform'], summary: 'Calls made by the calling application, newest first',
      querystring: Type.Object(StreamQuery), response: { 200: TransactionList, ...errorResponses() },
    },
  }, async (request) => {
    const appId = request.principal!.id;
    const w = parseStreamWindow(request.query);
    const [page, stats] = await Promise.all([repos.transactions.list(appId, w), repos.transactions.stats(appId, w)]);
    return {
      transactions: page.transactions.map((t) => ({ ...t, timestamp: t.timestamp.toISOString() })),
      meta: {
        stats,
        pagination: streamMeta(app.links, 'platform', '/api/v1/transactions', w,
          page).pagination,
      },
    };
  });
}
