import type { Knex } from 'knex';
import { errorBodyProblem, type Outcome } from './oracle.js';
import type { Operation } from './operations.js';

type PoolClient = { pool: { max: number }; acquireConnection(): Promise<unknown>; releaseConnection(c: unknown): Promise<void> };

/** Takes every connection of the pool, as long-running work would, until `release`. */
export async function holdConnections(knex: Knex): Promise<{ release: () => Promise<void> }> {
  const client = knex.client as unknown as PoolClient;
  const held: unknown[] = [];
  for (let i = 0; i < client.pool.max; i++) held.push(await client.acquireConnection());
  return { release: async () => { for (const c of held.splice(0)) await client.releaseConnection(c); } };
}

/** Under saturation a 503 is the right answer if it says when to come back (Retry-After) with the error body. */
export function saturationProblem(op: Operation, out: Outcome): string | null {
  if (out.status === 503) return out.retryAfter ? errorBodyProblem(op, 503, out.contentType, out.body) : '503 without Retry-After';
  return out.problem;
}
