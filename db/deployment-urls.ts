// The deployment's public URLs shared through the database (migration 009; docs/operations/scale-out.md): an API part
// announces its public URL, a gateway its public MQTT URL; parts elsewhere read them instead of
// guessing from their own ports or a default that may name another broker.
import type { Knex } from 'knex';

export type DeploymentUrlKind = 'api' | 'mqtt';

/** Records (or replaces) the URL a part serves; the last part to start wins, so all should agree (a load balancer's). */
export async function announceUrl(knex: Knex, kind: DeploymentUrlKind, url: string): Promise<void> {
  await knex.raw(`
    INSERT INTO deployment_urls (kind, url, updated_at) VALUES (?, ?, now())
    ON CONFLICT (kind) DO UPDATE SET url = EXCLUDED.url, updated_at = now()`, [kind, url]);
}

/** The URL announced for `kind`, or null when no part serving it has started yet. */
export async function announcedUrl(knex: Knex, kind: DeploymentUrlKind): Promise<string | null> {
  const row = await knex('deployment_urls').first('url').where({ kind });
  return row?.url ?? null;
}
