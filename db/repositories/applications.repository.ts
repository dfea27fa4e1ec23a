import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { hashSecret, newSecret, secretMatches } from '../../lib/secrets.js';
import { LRUCache } from 'lru-cache';
import { isUuid } from '../../lib/uuid.js';
import type { AppKind, Principal } from './scope.js';

/**
 * How long a successful authentication is reused (one round trip less per API request). Keyed
 * by the hash of the credential, never the credential. A secret rotated in this process clears it at
 * once; one rotated by another process stops working here within this time.
 */
export const AUTH_CACHE_MS = 5000;
interface CachedAuth { principal: Principal; expiresAt: Date | null }

export interface Application { id: string; name: string; kind: AppKind; isDefault: boolean; createdAt: Date }
export interface NewApplication extends Application { secret: string; webhookSecret: string }

const COLUMNS = ['id', 'name', 'kind', 'is_default', 'created_at'];
interface ApplicationRow { id: string; name: string; kind: AppKind; is_default: boolean; created_at: Date }
const toApp = (r: ApplicationRow): Application =>
  ({ id: r.id, name: r.name, kind: r.kind, isDefault: r.is_default, createdAt: r.created_at });

export function applicationsRepository(knex: Knex) {
  const authenticated = new LRUCache<string, CachedAuth>({ max: 10_000, ttl: AUTH_CACHE_MS });
  const cached = (key: string): Principal | null | undefined => {
    const hit = authenticated.get(key);
    if (!hit) return undefined;
    return hit.expiresAt && hit.expiresAt < new Date() ? null : hit.principal;
  };
  return {
    async create(input: { name: string; kind: AppKind; isDefault?: boolean }, trx: Knex = knex): Promise<NewApplication> {
      const secret = newSecret();
      const webhookSecret = newSecret(32);
      const row = {
        id: randomUUID(), name: input.name, kind: input.kind, secret_hash: hashSecret(secret),
        webhook_secret: webhookSecret, is_default: input.isDefault ?? false, created_at: new Date(),
      };
      await trx('applications').insert(row);
      return { ...toApp(row), secret, webhookSecret };
    },

    async get(id: string, trx: Knex = knex): Promise<Application | undefined> {
      const row = await trx('applications').select(COLUMNS).where({ id }).first();
      return row && toApp(row);
    },

    async list(trx: Knex = knex): Promise<Application[]> {
      return (await trx('applications').select(COLUMNS).orderBy('created_at')).map(toApp);
    },

    async findDefault(trx: Knex = knex): Promise<Application | undefined> {
      const row = await trx('applications').select(COLUMNS).where({ is_default: true }).first();
      return row && toApp(row);
    },

    async webhookSecret(id: string, trx: Knex = knex): Promise<string | undefined> {
      return (await trx('applications').select('webhook_secret').where({ id }).first())?.webhook_secret;
    },

    /** HTTP Basic `appId:secret`; an id that is not a UUID never reaches the database. */
    async authenticate(id: string, secret: string, trx: Knex = knex): Promise<Principal | null> {
      if (!isUuid(id)) return null;
      const key = `basic:${id}:${hashSecret(secret)}`;
      const hit = trx === knex ? cached(key) : undefined;
      if (hit !== undefined) return hit;
      const row = await trx('applications').select('id', 'kind', 'secret_hash').where({ id }).first();
      if (!row || !secretMatches(secret, row.secret_hash)) return null;
      const principal: Principal = { id: row.id, kind: row.kind };
      if (trx === knex) authenticated.set(key, { principal, expiresAt: null });
      return principal;
    },

    /** `Bearer <token>` issued by the admin API. */
    async authenticateToken(token: string, trx: Knex = knex): Promise<Principal | null> {
      const tokenHash = hashSecret(token);
      const key = `bearer:${tokenHash}`;
      const hit = trx === knex ? cached(key) : undefined;
      if (hit !== undefined) return hit;
      const row = await trx('access_tokens as t').join('applications as a', 'a.id', 't.application_id')
        .select('a.id', 'a.kind', 't.expires_at').where('t.token_hash', tokenHash).first();
      if (!row || (row.expires_at && new Date(row.expires_at) < new Date())) return null;
      const principal: Principal = { id: row.id, kind: row.kind };
      if (trx === knex) authenticated.set(key, { principal, expiresAt: row.expires_at ? new Date(row.expires_at) : null });
      return principal;
    },

    async createToken(applicationId: string, ttlSeconds: number | null, trx: Knex = knex) {
      const token = newSecret(32);
      const expiresAt = ttlSeconds ? new Date(Date.now() + ttlSeconds * 1000) : null;
      await trx('access_tokens').insert({
        token_hash: hashSecret(token), application_id: applicationId, expires_at: expiresAt, created_at: new Date(),
      });
      return { accessToken: token, expiresAt };
    },

    /** A new secret for an application whose secret was lost (e.g. credentials.json deleted). */
    async rotateSecret(id: string, trx: Knex = knex): Promise<string> {
      const secret = newSecret();
      await trx('applications').where({ id }).update({ secret_hash: hashSecret(secret) });
      authenticated.clear();
      return secret;
    },

    async createAdminToken(trx: Knex = knex): Promise<string> {
      const token = newSecret(32);
      await trx('admin_tokens').insert({ token_hash: hashSecret(token), created_at: new Date() });
      return token;
    },

    /** Every admin token stops working (before a new one is issued by credentials rotation). */
    async revokeAdminTokens(trx: Knex = knex): Promise<void> {
      await trx('admin_tokens').del();
    },

    async isAdminToken(token: string, trx: Knex = knex): Promise<boolean> {
      return Boolean(await trx('admin_tokens').where({ token_hash: hashSecret(token) }).first());
    },
  };
}
export type ApplicationsRepository = ReturnType<typeof applicationsRepository>;
