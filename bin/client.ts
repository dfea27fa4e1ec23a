import fs from 'node:fs';
import path from 'node:path';
import { SETTINGS } from '../lib/config.js';
import { readCredentials, type Credentials } from './credentials.js';

/** A user-facing CLI failure: printed as one line, exit code 1, no stack trace; `status`: the API's HTTP status, if any. */
export class CliError extends Error {
  constructor(message: string, readonly status?: number) { super(message); }
}

export interface ClientOptions { apiUrl?: string; dataDir?: string; json?: boolean; appId?: string; appSecret?: string }

export interface Client {
  apiUrl: string;
  credentials: Credentials | null;
  /** A call as the application (HTTP Basic), like any application would make; `T`: its answer (bin/api-types.ts). */
  api<T = unknown>(method: string, urlPath: string, body?: unknown): Promise<T>;
  /** A call to the admin API with the admin token. */
  admin<T = unknown>(method: string, urlPath: string, body?: unknown): Promise<T>;
  /** A call as the application whose answer the caller reads (a streamed body, a HEAD's headers); a 4xx/5xx throws. */
  fetch(method: string, urlPath: string): Promise<Response>;
}

/** The environment the client commands read, beside their flags (docs/reference/cli.md lists it). */
export const CLIENT_ENV = {
  apiUrl: { name: 'DRIVEWIRE_API_URL', description: "the API's base URL when --api-url is not given; else credentials.json's" },
  appId: { name: 'DRIVEWIRE_APP_ID', description: "the application the commands act as; else credentials.json's default application" },
  appSecret: { name: 'DRIVEWIRE_APP_SECRET', description: "that application's secret" },
  adminToken: { name: 'DRIVEWIRE_ADMIN_TOKEN', description: "the admin token of the admin commands (apps, devices); else credentials.json's" },
  adminTokenFile: {
    name: 'DRIVEWIRE_ADMIN_TOKEN_FILE',
    description: 'a file holding the admin token, read when DRIVEWIRE_ADMIN_TOKEN is unset (a mounted secret on a host other than the first one)',
  },
} as const;

export function defaultDataDir(): string {
  return process.env[SETTINGS.dataDir.env] || SETTINGS.dataDir.def;
}

/** Reads the API URL and credentials from <data-dir>/credentials.json unless given as options. */
export function createClient(opts: ClientOptions): Client {
  const dataDir = path.resolve(opts.dataDir ?? defaultDataDir());
  const credentials = readCredentials(dataDir);
  const apiUrl = (opts.apiUrl ?? process.env[CLIENT_ENV.apiUrl.name] ?? credentials?.apiUrl)?.replace(/\/+$/, '');
  const appId = opts.appId ?? process.env[CLIENT_ENV.appId.name] ?? credentials?.application?.id;
  const appSecret = opts.appSecret ?? process.env[CLIENT_ENV.appSecret.name] ?? credentials?.application?.secret;
  const dirFlag = opts.dataDir ?? defaultDataDir();
  // A file without the secret: this data dir did not issue the credentials, or they were lost (never re-issued at start).
  const need = (what: string) => new CliError(credentials && what !== 'API URL'
    ? `No ${what} in ${path.join(dataDir, 'credentials.json')}: issue new ones with 'drivewire credentials rotate --data-dir ${dirFlag}' `
      + '(the platform stopped), or pass them as options'
    : `No ${what}: start the platform with 'drivewire serve --data-dir ${dirFlag}' or pass --api-url (and credentials)`);

  async function send(method: string, urlPath: string, auth: string, body?: unknown): Promise<Response> {
    if (!apiUrl) throw need('API URL');
    const url = /^https?:/.test(urlPath) ? urlPath : `${apiUrl}${urlPath}`;
    let res: Response;
    try {
      res = await fetch(url, {
        method, headers: { authorization: auth, accept: 'application/json', ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
        body: body !== undefined ? JSON.stringify(body) : undefined,
      });
    } catch (err) {
      throw new CliError(`Cannot reach the drivewire API at ${apiUrl}: ${(err as Error & { cause?: Error }).cause?.message ?? (err as Error).message}`);
    }
    if (res.status < 400) return res;
    const text = await res.text();
    const parsed = parse(text);
    // the API's error envelope (docs/reference/rest-api.md#errors); anything else is shown as it came
    const error = (parsed !== null && typeof parsed === 'object' ? parsed : {}) as { error?: string; message?: string };
    const msg = error.message ?? text;
    if (res.status === 401) throw new CliError(`401 Unauthorized - ${msg} (check the credentials in ${path.join(dataDir, 'credentials.json')})`, 401);
    throw new CliError(`${res.status} ${error.error ?? res.statusText} - ${msg}`, res.status);
  }

  async function call<T>(method: string, urlPath: string, auth: string, body?: unknown): Promise<T> {
    return parse(await (await send(method, urlPath, auth, body)).text()) as T;
  }

  const appAuth = () => {
    if (!appId || !appSecret) throw need('application credentials');
    return `Basic ${Buffer.from(`${appId}:${appSecret}`).toString('base64')}`;
  };

  return {
    apiUrl: apiUrl ?? '',
    credentials,
    api(method, urlPath, body) {
      return call(method, urlPath, appAuth(), body);
    },
    fetch(method, urlPath) {
      return send(method, urlPath, appAuth());
    },
    admin(method, urlPath, body) {
      const token = adminToken(credentials);
      if (!token) throw need('admin token');
      return call(method, urlPath, `Bearer ${token}`, body);
    },
  };
}

/** JSON text as a value; anything else (an empty body: null) as it came. */
function parse(text: string): unknown {
  try { return text ? JSON.parse(text) : null; } catch { return text; }
}

/** The admin token: DRIVEWIRE_ADMIN_TOKEN, else the file DRIVEWIRE_ADMIN_TOKEN_FILE names, else credentials.json. */
function adminToken(credentials: Credentials | null): string | null {
  const token = process.env[CLIENT_ENV.adminToken.name];
  if (token) return token;
  const file = process.env[CLIENT_ENV.adminTokenFile.name];
  if (file) {
    try {
      return fs.readFileSync(file, 'utf8').trim();
    } catch (err) {
      throw new CliError(`Cannot read ${CLIENT_ENV.adminTokenFile.name} ${file}: ${(err as Error).message}`);
    }
  }
  return credentials?.adminToken ?? null;
}

/** Prints JSON for scripts (--json) or a human rendering. */
export function output(json: boolean | undefined, value: unknown, human: () => string): void {
  process.stdout.write(json ? JSON.stringify(value, null, 2) + '\n' : human() + '\n');
}

export function table(rows: Record<string, unknown>[], columns: string[]): string {
  if (!rows.length) return '(none)';
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => String(r[c] ?? '').length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i])).join('  ').trimEnd();
  return [line(columns), ...rows.map((r) => line(columns.map((c) => String(r[c] ?? ''))))].join('\n');
}
