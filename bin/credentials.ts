import fs from 'node:fs';
import path from 'node:path';
import type { Repositories } from '../db/index.js';

export interface Credentials {
  apiUrl: string;
  mqttUrl: string | null;
  adminToken: string;
  application: { id: string; name: string; kind: 'enterprise' | 'consumer'; secret: string; webhookSecret?: string };
}

export const credentialsPath = (dataDir: string) => path.join(dataDir, 'credentials.json');

export function readCredentials(dataDir: string): Credentials | null {
  try {
    return JSON.parse(fs.readFileSync(credentialsPath(dataDir), 'utf8')) as Credentials;
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

/**
 * First start creates a default Enterprise application and an admin token and writes them to
 * `<data-dir>/credentials.json` (mode 0600); later starts reuse them. If the file was lost, the
 * default application gets a new secret and a new admin token is issued, since only hashes are kept.
 */
export async function ensureCredentials(repos: Repositories, dataDir: string, urls: { apiUrl: string; mqttUrl: string | null }): Promise<Credentials> {
  const existing = readCredentials(dataDir);
  const def = await repos.applications.findDefault();
  if (existing && def && existing.application.id === def.id
    && (await repos.applications.authenticate(def.id, existing.application.secret))
    && (await repos.applications.isAdminToken(existing.adminToken))) {
    const creds = { ...existing, ...urls };
    if (existing.apiUrl !== urls.apiUrl || existing.mqttUrl !== urls.mqttUrl) writeCredentials(dataDir, creds);
    return creds;
  }
  let application: Credentials['application'];
  if (def) {
    application = { id: def.id, name: def.name, kind: def.kind, secret: await repos.applications.rotateSecret(def.id) };
  } else {
    const created = await repos.applications.create({ name: 'Default application', kind: 'enterprise', isDefault: true });
    application = { id: created.id, name: created.name, kind: created.kind, secret: created.secret, webhookSecret: created.webhookSecret };
  }
  const creds: Credentials = { ...urls, adminToken: await repos.applications.createAdminToken(), application };
  writeCredentials(dataDir, creds);
  return creds;
}
