import fs from 'node:fs';
import path from 'node:path';
import type { Knex } from 'knex';
import type { Repositories } from '../db/index.js';

export interface Credentials {
  /**
   * The database these credentials belong to (its cluster's system identifier and its name): a start on another
   * database with this data directory is refused rather than overwriting them. Null in files written without it.
   */
  database: string | null;
  /** Written only by a part that serves the API. */
  apiUrl: string | null;
  /** Written only by a part that runs the gateway. */
  mqttUrl: string | null;
  /** Known only where it was issued (the first start, or `drivewire credentials rotate`). */
  adminToken: string | null;
  application: { id: string; name: string; kind: 'enterprise' | 'consumer'; secret: string; webhookSecret?: string } | null;
}

export type DefaultApplication = NonNullable<Credentials['application']>;

/**
 * The credentials as a started platform offers them to code and tests that need the default application:
 * reading `application` or `adminToken` where this part does not hold them (it did not create them and
 * its credentials.json lacks them) throws, saying where they are.
 */
export interface HeldCredentials extends Omit<Credentials, 'application' | 'adminToken'> {
  readonly application: DefaultApplication;
  readonly adminToken: string;
}

export function held(creds: Credentials, dataDir: string): HeldCredentials {
  const missing = (what: string) => new Error(`${what} of the default application is not in ${credentialsPath(dataDir)}: it is in the credentials.json `
    + 'of the part that started first on this database (give the CLI elsewhere DRIVEWIRE_ADMIN_TOKEN or DRIVEWIRE_ADMIN_TOKEN_FILE), or issue new ones with drivewire credentials rotate');
  return {
    database: creds.database,
    apiUrl: creds.apiUrl,
    mqttUrl: creds.mqttUrl,
    get application() { if (!creds.application) throw missing('the secret'); return creds.application; },
    get adminToken() { if (!creds.adminToken) throw missing('the admin token'); return creds.adminToken; },
  };
}

export const credentialsPath = (dataDir: string) => path.join(dataDir, 'credentials.json');

export function readCredentials(dataDir: string): Credentials | null {
  try {
    const c = JSON.parse(fs.readFileSync(credentialsPath(dataDir), 'utf8'));
    return { database: c.database ?? null, apiUrl: c.apiUrl ?? null, mqttUrl: c.mqttUrl ?? null, adminToken: c.adminToken ?? null, application: c.application ?? null };
  } catch {
    return null;
  }
}

function writeCredentials(dataDir: string, creds: Credentials): void {
  fs.mkdirSync(dataDir, { recursive: true });
  const file = credentialsPath(dataDir);
  fs.writeFileSync(file, JSON.stringify(creds, null, 2) + '\n', { mode: 0o600 });
  fs.chmodSync(file, 0o600);
}

/** Which database this is, whatever URL reached it: its cluster's system identifier and its name. */
export async function databaseIdentity(knex: Knex): Promise<string> {
  const { rows } = await knex.raw<{ rows: { id: string }[] }>(
    'SELECT (SELECT system_identifier FROM pg_control_system())::text || \'/\' || current_database() AS id');
  return rows[0].id;
}

/** Refuses a data directory whose credentials.json belongs to another database: starting would overwrite them. */
function sameDatabase(existing: Credentials | null, database: string, dataDir: string): void {
  if (existing?.database && existing.database !== database) {
    throw new Error(`${credentialsPath(dataDir)} holds the credentials of another database (${existing.database}, this one is ${database}): `
      + 'give each database its own data directory (--data-dir), or move that file away to start here');
  }
}

/** Serializes the first start of several parts on one empty database (any constant works; this one spells "dwcr"). */
const CREDENTIALS_LOCK = 0x64776372;

export interface EnsuredCredentials { credentials: Credentials; created: boolean }

/**
 * The first start on an empty database creates the default Enterprise application and an admin token and
 * writes them to `<data-dir>/credentials.json` (mode 0600). Every later start, of any part and on any
 * data dir, only reuses them: a part started on an empty data dir against a shared database never
 * creates or rotates anything; `drivewire credentials rotate` is the one way to issue new ones.
 * URLs merge: only the parts given (`apiUrl` by an API part, `mqttUrl` by a gateway) replace the file's.
 */
export async function ensureCredentials(knex: Knex, repos: Repositories, dataDir: string,
  urls: { apiUrl?: string; mqttUrl?: string }): Promise<EnsuredCredentials> {
  const existing = readCredentials(dataDir);
  const database = await databaseIdentity(knex);
  sameDatabase(existing, database, dataDir);
  const first = await knex.transaction(async (trx) => {
    await trx.raw('SELECT pg_advisory_xact_lock(?)', [CREDENTIALS_LOCK]);
    if (await repos.applications.findDefault(trx)) return null;
    const created = await repos.applications.create({ name: 'Default application', kind: 'enterprise', isDefault: true }, trx);
    const application = { id: created.id, name: created.name, kind: created.kind, secret: created.secret, webhookSecret: created.webhookSecret };
    return { application, adminToken: await repos.applications.createAdminToken(trx) };
  });
  const held = first ?? await stillValid(repos, existing);
  const creds: Credentials = {
    database,
    apiUrl: urls.apiUrl ?? existing?.apiUrl ?? null,
    mqttUrl: urls.mqttUrl ?? existing?.mqttUrl ?? null,
    adminToken: held.adminToken,
    application: held.application,
  };
  if (JSON.stringify(creds) !== JSON.stringify(existing) && (existing || creds.apiUrl || creds.mqttUrl || creds.application)) {
    writeCredentials(dataDir, creds);
  }
  return { credentials: creds, created: first !== null };
}

/** The file's application secret and admin token, each kept only if this database still accepts it. */
async function stillValid(repos: Repositories, existing: Credentials | null): Promise<Pick<Credentials, 'application' | 'adminToken'>> {
  const def = await repos.applications.findDefault();
  const app = existing?.application;
  const appOk = Boolean(app && def && app.id === def.id && (await repos.applications.authenticate(app.id, app.secret)));
  const tokenOk = Boolean(existing?.adminToken && (await repos.applications.isAdminToken(existing.adminToken)));
  return { application: appOk ? app! : null, adminToken: tokenOk ? existing!.adminToken : null };
}

/**
 * `drivewire credentials rotate`: a new secret for the default application and a new admin token (the
 * previous admin tokens stop working), written to `<data-dir>/credentials.json`. The one way to replace
 * lost credentials; every API client of the default application must then use the new secret.
 */
export async function rotateCredentials(knex: Knex, repos: Repositories, dataDir: string): Promise<Credentials> {
  const existing = readCredentials(dataDir);
  const database = await databaseIdentity(knex);
  sameDatabase(existing, database, dataDir);
  const fresh = await knex.transaction(async (trx) => {
    await trx.raw('SELECT pg_advisory_xact_lock(?)', [CREDENTIALS_LOCK]);
    const def = await repos.applications.findDefault(trx);
    if (!def) return null;
    await repos.applications.revokeAdminTokens(trx);
    const application = {
      id: def.id, name: def.name, kind: def.kind, secret: await repos.applications.rotateSecret(def.id, trx),
      webhookSecret: await repos.applications.webhookSecret(def.id, trx),
    };
    return { application, adminToken: await repos.applications.createAdminToken(trx) };
  });
  if (!fresh) throw new Error('no default application yet: start the platform once (drivewire serve) to create it');
  const creds: Credentials = { database, apiUrl: existing?.apiUrl ?? null, mqttUrl: existing?.mqttUrl ?? null, ...fresh };
  writeCredentials(dataDir, creds);
  return creds;
}
