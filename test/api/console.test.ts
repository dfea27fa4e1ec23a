import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { authorizationFromProtocols } from '../../api/plugins/auth.js';
import { contentSecurityPolicy } from '../../api/modules/console/console.routes.js';
import { loadConfig, ConfigError } from '../../lib/config.js';

/** The console served at /console, and the browser's way onto the live stream (credentials as subprotocols). */
let t: TestApp;
let wsUrl: string;
const ATTRIBUTION = 'Tiles <b>Example</b> </script><script>alert(1)</script>';

beforeAll(async () => {
  t = await buildTestApp({ tileUrl: 'https://tiles.example.com/{z}/{x}/{y}.png', tileAttribution: ATTRIBUTION }, { onMessage: () => () => undefined });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  wsUrl = `ws://127.0.0.1:${(t.app.server.address() as AddressInfo).port}/api/v1/messages`;
});
afterAll(async () => { await t?.close(); });

const b64url = (s: string) => Buffer.from(s).toString('base64url');

/** Opens a stream with the given subprotocols; resolves with the selected protocol, or the HTTP status refused. */
function open(protocols: string[], headers: Record<string, string> = {}): Promise<{ ws?: WebSocket; protocol?: string; status?: number }> {
  return new Promise((resolve) => {
    const ws = new WebSocket(wsUrl, protocols, { headers });
    ws.once('open', () => resolve({ ws, protocol: ws.protocol }));
    ws.once('unexpected-response', (_req, res) => { resolve({ status: res.statusCode }); ws.terminate(); });
    ws.once('error', () => undefined);
  });
}

describe('console page', () => {
  it('serves the page without credentials, with the tile settings as inert JSON', async () => {
    expect((await t.app.inject('/console')).headers.location).toBe('/console/');
    const page = await t.app.inject('/console/');
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    const json = /<script type="application\/json" id="drivewire-settings">(.*?)<\/script>/.exec(page.body)![1];
    expect(JSON.parse(json)).toEqual({ tileUrl: 'https://tiles.example.com/{z}/{x}/{y}.png', tileAttribution: ATTRIBUTION });
    expect(page.body).not.toContain('</script><script>alert(1)');
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    expect(page.headers['content-security-policy']).toContain("img-src 'self' data: https://tiles.example.com;");
  });

  it('lets the page load images only from the tile server, any {s} subdomain of it', () => {
    expect(contentSecurityPolicy('https://{s}.tile.example.org:8443/{z}/{x}/{y}.png')).toContain("img-src 'self' data: https://*.tile.example.org:8443;");
    expect(contentSecurityPolicy('http://127.0.0.1:9/{z}/{x}/{y}.png')).toContain("img-src 'self' data: http://127.0.0.1:9;");
  });

  it('serves the bundle (script and styles with Leaflet inside) and nothing else of the cache', async () => {
    const js = await t.app.inject('/console/app.js');
    expect(js.statusCode).toBe(200);
    expect(js.headers['content-type']).toMatch(/javascript/);
    expect(js.body).toContain('leaflet');
    const css = await t.app.inject('/console/app.css');
    expect(css.headers['content-type']).toMatch(/^text\/css/);
    expect(css.body).toContain('.leaflet-container');
    expect(css.body).toMatch(/data:image\/png;base64/); // Leaflet's images inlined: no CDN, no extra files
    for (const url of ['/console/build-meta.json', '/console/../package.json', '/console/app.js.map', '/console/index.html']) {
      expect((await t.app.inject(url)).statusCode, url).toBe(404);
    }
  });

  it('is no operation of the OpenAPI document', async () => {
    const doc = (await t.app.inject('/api/v1/openapi.json')).json();
    expect(Object.keys(doc.paths).filter((p) => p.startsWith('/console'))).toEqual([]);
    expect(doc.paths['/api/v1/messages'].get.description).toContain('drivewire.basic.');
  });
});

describe('live stream credentials as WebSocket subprotocols', () => {
  it('accepts Basic credentials as drivewire.basic.<base64url> and selects only drivewire.v1', async () => {
    const app = await t.make.application();
    const device = await t.make.device(app.principal);
    const { ws, protocol } = await open(['drivewire.v1', `drivewire.basic.${b64url(`${app.id}:${app.secret}`)}`]);
    expect(protocol).toBe('drivewire.v1');
    const ack = new Promise((resolve) => ws!.once('message', (raw) => resolve(JSON.parse(raw.toString()))));
    ws!.send(JSON.stringify({ type: 'sub', subject: { type: 'device', id: device.id } }));
    expect(await ack).toEqual({ type: 'sub', subject: { type: 'device', id: device.id }, payload: { ack: true } });
    ws!.close();
  });

  it('accepts a token as drivewire.bearer.<token>', async () => {
    const app = await t.make.application();
    const { accessToken: token } = await t.repos.applications.createToken(app.id, 3600);
    const { ws, protocol } = await open(['drivewire.v1', `drivewire.bearer.${token}`]);
    expect(protocol).toBe('drivewire.v1');
    ws!.close();
  });

  it('refuses a bad credential with 401 before any upgrade', async () => {
    const app = await t.make.application();
    expect((await open(['drivewire.v1', `drivewire.basic.${b64url(`${app.id}:wrong`)}`])).status).toBe(401);
    expect((await open(['drivewire.v1', 'drivewire.bearer.nope'])).status).toBe(401);
    expect((await open(['drivewire.v1'])).status).toBe(401);
  });

  it('takes credentials from subprotocols on the stream only, not on REST routes', async () => {
    const app = await t.make.application();
    const res = await t.app.inject({ url: '/api/v1/devices', headers: { 'sec-websocket-protocol': `drivewire.v1, drivewire.basic.${b64url(`${app.id}:${app.secret}`)}` } });
    expect(res.statusCode).toBe(401);
  });

  it('parses only well-formed credential protocols', () => {
    expect(authorizationFromProtocols('drivewire.v1, drivewire.bearer.abc_-1')).toBe('Bearer abc_-1');
    expect(authorizationFromProtocols(`drivewire.basic.${b64url('a:b')}`)).toBe(`Basic ${Buffer.from('a:b').toString('base64')}`);
    expect(authorizationFromProtocols('drivewire.v1, chat, drivewire.basic.a+b=')).toBeNull();
    expect(authorizationFromProtocols(undefined)).toBeNull();
  });
});

describe('tile settings', () => {
  it('defaults to OpenStreetMap, takes --tile-url / DRIVEWIRE_TILE_URL, and refuses a URL that is no tile template', () => {
    expect(loadConfig({}, {}).tileUrl).toBe('https://tile.openstreetmap.org/{z}/{x}/{y}.png');
    expect(loadConfig({}, { DRIVEWIRE_TILE_URL: 'https://{s}.tiles.example/{z}/{x}/{y}.png' }).tileUrl).toBe('https://{s}.tiles.example/{z}/{x}/{y}.png');
    expect(loadConfig({ tileUrl: 'http://127.0.0.1:8080/{z}/{x}/{y}.png' }, { DRIVEWIRE_TILE_URL: 'https://x/{z}/{x}/{y}' }).tileUrl).toBe('http://127.0.0.1:8080/{z}/{x}/{y}.png');
    expect(() => loadConfig({ tileUrl: 'ftp://x/{z}/{x}/{y}' }, {})).toThrow(ConfigError);
    expect(() => loadConfig({ tileUrl: 'https://tiles.example/static.png' }, {})).toThrow(/--tile-url \/ DRIVEWIRE_TILE_URL/);
  });
});
