import type { Knex } from 'knex';
import type pg from 'pg';

/** The knex client's raw connections (the pg driver's clients), outside its pool. */
interface RawConnections {
  acquireRawConnection(): Promise<pg.Client>;
  destroyRawConnection(connection: pg.Client): Promise<void>;
}

/**
 * A dedicated PostgreSQL connection LISTENing on `channel`, opened again `reconnectMs` after a loss. `onPayload`
 * gets each notification's payload; `onListening` runs each time the LISTEN is (again) in place, so the caller can
 * catch up on what was notified while it was not.
 */
export function listenChannel(knex: Knex, channel: string, reconnectMs: number,
  onPayload: (payload: string) => void, onListening: () => void) {
  const client: RawConnections = knex.client;
  let conn: pg.Client | null = null;
  let closed = false;
  let retry: NodeJS.Timeout | null = null;

  const lost = () => {
    const c = conn;
    conn = null;
    if (c) client.destroyRawConnection(c).catch(() => undefined);
    if (!closed) retry ??= setTimeout(() => { retry = null; void open(); }, reconnectMs);
  };

  async function open(): Promise<void> {
    try {
      const c = await client.acquireRawConnection();
      if (closed) { await client.destroyRawConnection(c); return; }
      conn = c;
      c.on('notification', (n: { channel: string; payload?: string }) => { if (n.channel === channel) onPayload(n.payload ?? ''); });
      c.on('error', lost);
      c.on('end', lost);
      await c.query(`LISTEN ${channel}`);
      onListening();
    } catch {
      lost();
    }
  }
  void open();

  return {
    async close() {
      closed = true;
      if (retry) clearTimeout(retry);
      const c = conn;
      conn = null;
      if (c) await client.destroyRawConnection(c).catch(() => undefined);
    },
  };
}
