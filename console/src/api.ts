/** The public /api/v1 API as the signed-in application: every call of the console goes through here. */
import type { Message } from './records.js';

export type Credentials = { kind: 'basic'; id: string; secret: string } | { kind: 'bearer'; token: string };

const STORE = 'drivewire.console.credentials';
let credentials: Credentials | null = null;

export class ApiError extends Error {
  constructor(readonly status: number, readonly body: { statusCode?: number; error?: string; message?: string } | null) {
    super(body?.message ? `${status} ${body.error ?? ''}: ${body.message}` : `HTTP ${status}`);
  }
}

function header(c: Credentials): string {
  return c.kind === 'basic' ? `Basic ${btoa(`${c.id}:${c.secret}`)}` : `Bearer ${c.token}`;
}

/** Links in records are absolute (the platform's public URL); the console calls them on its own origin. */
export function pathOf(url: string): string {
  if (!/^https?:/.test(url)) return url;
  const u = new URL(url);
  return u.pathname + u.search;
}

/** A call; `T` is the answer's shape (records.ts), null for 204. */
export async function api<T = unknown>(method: string, url: string, body?: unknown, c: Credentials | null = credentials): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (c) headers.authorization = header(c);
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(pathOf(url), { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  if (res.status === 204) return null as T;
  const text = await res.text();
  let json: unknown = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch { /* not JSON: reported below with the status */ }
  if (!res.ok) throw new ApiError(res.status, json as ApiError['body']);
  return json as T;
}

export const get = <T = unknown>(url: string) => api<T>('GET', url);

/** Checks the credentials with a cheap call and keeps them for this tab (sessionStorage) when they work. */
export async function signIn(c: Credentials): Promise<void> {
  await api('GET', '/api/v1/devices?limit=1', undefined, c);
  credentials = c;
  sessionStorage.setItem(STORE, JSON.stringify(c));
}

export function restore(): Credentials | null {
  try {
    const c = JSON.parse(sessionStorage.getItem(STORE) ?? 'null') as Credentials | null;
    if (c && (c.kind === 'basic' || c.kind === 'bearer')) credentials = c;
  } catch { /* ignore a damaged entry */ }
  return credentials;
}

export function signOut(): void {
  credentials = null;
  sessionStorage.removeItem(STORE);
}

export function who(): string {
  if (!credentials) return '';
  return credentials.kind === 'basic' ? `application ${credentials.id}` : 'token';
}

/** base64url, as a WebSocket subprotocol token allows (no + / =). */
const b64url = (s: string) => btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');

/** The subprotocols that carry the credentials on the live stream (a browser cannot set Authorization there). */
function protocols(c: Credentials): string[] {
  return ['drivewire.v1', c.kind === 'basic' ? `drivewire.basic.${b64url(`${c.id}:${c.secret}`)}` : `drivewire.bearer.${c.token}`];
}

/** The live message stream (GET /api/v1/messages as a WebSocket), resubscribing after a reconnect. */
export class Stream {
  private ws: WebSocket | null = null;
  private readonly devices = new Set<string>();
  private closed = false;
  private retryMs = 1000;

  constructor(private readonly onMessage: (deviceId: string, message: Message) => void, private readonly onState: (s: string) => void) {}

  open(): void {
    if (!credentials) return;
    this.closed = false;
    const url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/api/v1/messages`;
    const ws = new WebSocket(url, protocols(credentials));
    this.ws = ws;
    this.onState('connecting');
    ws.onopen = () => {
      this.retryMs = 1000;
      this.onState('live');
      for (const id of this.devices) this.send(id);
    };
    ws.onmessage = (ev) => {
      const frame = JSON.parse(String(ev.data)) as { type: string; subject: { id: string }; payload: Message };
      if (frame.type === 'pub') this.onMessage(frame.subject.id, frame.payload);
    };
    ws.onclose = () => {
      if (this.ws !== ws) return;
      this.ws = null;
      this.onState(this.closed ? 'off' : 'reconnecting');
      if (!this.closed) setTimeout(() => this.open(), this.retryMs = Math.min(this.retryMs * 2, 15_000));
    };
  }

  subscribe(deviceId: string): void {
    if (this.devices.has(deviceId)) return;
    this.devices.add(deviceId);
    this.send(deviceId);
  }

  private send(deviceId: string): void {
    if (this.ws?.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify({ type: 'sub', subject: { type: 'device', id: deviceId } }));
  }

  close(): void {
    this.closed = true;
    this.devices.clear();
    this.ws?.close();
    this.ws = null;
  }
}
