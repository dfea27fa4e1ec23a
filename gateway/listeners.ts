// Transports of the broker: MQTT over TCP, over WebSocket and over TLS (one Aedes behind all three).
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import tls from 'node:tls';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Aedes } from 'aedes';
import { WebSocketServer, createWebSocketStream } from 'ws';
import { ConfigError, type Config } from '../lib/config.js';
import { rethrowPortInUse } from '../lib/errors.js';
import { guardPackets, type PacketCut } from './packet-guard.js';

/** IANA port of MQTT over TLS, used when a certificate is given without --mqtt-tls-port. */
const MQTTS_PORT = 8883;
/** Longest MQTT fixed header (§2.2): a WebSocket message holds one packet, header included. */
const MAX_FIXED_HEADER = 5;

/** Called when a connection is cut for a packet over --mqtt-max-packet-bytes or --mqtt-max-subscribe-filters. */
export type OnPacketCut = (cut: PacketCut, remote: string | undefined) => void;

export interface Listeners {
  ports: { mqtt: number; ws: number | null; tls: number | null };
  urls: Record<string, string>;
  listening(): boolean;
  close(): Promise<void>;
}

function tlsOptions(config: Config): tls.TlsOptions | null {
  if (config.mqttTlsCert === null || config.mqttTlsKey === null) {
    if (config.mqttTlsPort !== null) throw new ConfigError(['--mqtt-tls-port needs --mqtt-tls-cert and --mqtt-tls-key']);
    return null;
  }
  const problems: string[] = [];
  const read = (file: string, flag: string) => {
    try { return fs.readFileSync(file); } catch (err) {
      problems.push(`${flag}: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
      return Buffer.alloc(0);
    }
  };
  const options = { cert: read(config.mqttTlsCert, '--mqtt-tls-cert'), key: read(config.mqttTlsKey, '--mqtt-tls-key') };
  if (problems.length) throw new ConfigError(problems);
  return options;
}

async function listen(server: net.Server, { port, host, what, flag }: PortSpec): Promise<number> {
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => { server.off('error', reject); resolve(); });
    });
  } catch (err) {
    rethrowPortInUse(err, port, what, flag);
  }
  return (server.address() as AddressInfo).port;
}

const closeServer = (server: net.Server) => new Promise<void>((resolve) => {
  server.close(() => resolve());
  if (server instanceof http.Server) server.closeAllConnections();
});

export interface PortSpec { port: number; host: string; what: string; flag: string }

/** The MQTT transports a gateway of this configuration listens on (null: off): port, flag and name of each. */
function transports(config: Config): { mqtt: PortSpec; ws: PortSpec | null; tls: PortSpec | null } {
  const host = config.mqttHost;
  return {
    mqtt: { port: config.mqttPort, host, what: 'MQTT', flag: '--mqtt-port' },
    ws: config.mqttWsPort !== null ? { port: config.mqttWsPort, host, what: 'MQTT over WebSocket', flag: '--mqtt-ws-port' } : null,
    tls: config.mqttTlsCert !== null ? { port: config.mqttTlsPort ?? MQTTS_PORT, host, what: 'MQTT over TLS', flag: '--mqtt-tls-port' } : null,
  };
}

/** Every port a gateway of this configuration listens on. */
export function mqttPorts(config: Config): PortSpec[] {
  const t = transports(config);
  return [t.mqtt, t.ws, t.tls].filter((p): p is PortSpec => p !== null);
}

/**
 * Fails at once, with the message a listener would give, when one of these ports is taken: a start checks before it
 * opens (or creates) its database, so a busy port stops it in a moment, not after the database's first start.
 */
export async function assertPortsFree(wanted: PortSpec[]): Promise<void> {
  for (const spec of wanted) {
    if (spec.port === 0) continue;
    const probe = net.createServer();
    await listen(probe, spec);
    await closeServer(probe);
  }
}

/** Starts every configured transport; if one cannot start, the others are closed again. */
export async function startListeners(broker: Aedes, config: Config, onCut: OnPacketCut = () => {}): Promise<Listeners> {
  const tlsOpts = tlsOptions(config);
  const spec = transports(config);
  const max = config.mqttMaxPacketBytes;
  const limits = { maxBytes: max, maxFilters: config.mqttMaxSubscribeFilters };
  const handle = (conn: Duplex, req?: http.IncomingMessage) => {
    broker.handle(conn, req);
    const remote = (conn as net.Socket).remoteAddress ?? req?.socket.remoteAddress;
    guardPackets(conn, limits, (cut) => onCut(cut, remote));
  };
  const host = config.mqttHost === '0.0.0.0' || config.mqttHost === '::' ? 'localhost' : config.mqttHost;
  const servers: net.Server[] = [];
  const ports: Listeners['ports'] = { mqtt: 0, ws: null, tls: null };
  const urls: Record<string, string> = {};
  let wss: WebSocketServer | null = null;
  try {
    const tcp = net.createServer((socket) => handle(socket));
    servers.push(tcp);
    ports.mqtt = await listen(tcp, spec.mqtt);
    urls.mqtt = `mqtt://${host}:${ports.mqtt}`;
    if (spec.ws) {
      const web = http.createServer((_req, res) => { res.writeHead(426, { 'content-type': 'text/plain' }).end('MQTT over WebSocket only\n'); });
      servers.push(web);
      // ws buffers a whole message before the stream sees it (default up to 100 MiB): bound it too.
      wss = new WebSocketServer({ server: web, maxPayload: max + MAX_FIXED_HEADER });
      wss.on('connection', (socket, req) => handle(createWebSocketStream(socket), req));
      ports.ws = await listen(web, spec.ws);
      urls['mqtt-ws'] = `ws://${host}:${ports.ws}`;
    }
    if (tlsOpts && spec.tls) {
      const secure = tls.createServer(tlsOpts, (socket) => handle(socket));
      servers.push(secure);
      ports.tls = await listen(secure, spec.tls);
      urls.mqtts = `mqtts://${host}:${ports.tls}`;
    }
  } catch (err) {
    wss?.close();
    await Promise.all(servers.filter((s) => s.listening).map(closeServer));
    throw err;
  }
  return {
    ports, urls,
    listening: () => servers.every((s) => s.listening),
    async close() {
      wss?.close();
      await Promise.all(servers.map(closeServer));
    },
  };
}
