import type { ChildProcess } from 'node:child_process';
import type { Command } from 'commander';
import { embeddedDbDir, loadConfig } from '../../lib/config.js';
import { maskedDatabaseUrl } from '../../lib/database-url.js';
import { createLogger } from '../../lib/logger.js';
import { trimWhenIdle } from '../../lib/malloc-trim.js';
import { SERVICE_KINDS } from '../../lib/services.js';
import { credentialsPath, rotateCredentials } from '../credentials.js';
import type { Platform } from '../platform.js';
import { runs } from '../roles.js';

/** commander's camelCase options → config keys (`urlTelemetry` → `url.telemetry`). */
export function configFromOptions(o: Record<string, unknown>) {
  const flags: Record<string, unknown> = { ...o };
  for (const k of SERVICE_KINDS) {
    const camel = `url${k[0].toUpperCase()}${k.slice(1)}`;
    if (o[camel] !== undefined) flags[`url.${k}`] = o[camel];
  }
  return loadConfig(flags);
}

const dbOptions = (cmd: Command) => cmd
  .option('--data-dir <dir>', 'data directory (embedded database, credentials.json)')
  .option('--database-url <url>', 'PostgreSQL + PostGIS URL (default: embedded PGlite in <data-dir>/pgdata)');

/** Human-readable log lines on a terminal (pino-pretty, when installed); JSON lines otherwise. */
async function prettyStream() {
  try {
    const { default: pretty } = await import('pino-pretty');
    return pretty({ colorize: true, translateTime: 'SYS:HH:MM:ss', ignore: 'pid,hostname,service' });
  } catch {
    return undefined;
  }
}

/**
 * The API URL a `drivewire serve` started as `child` prints in its banner (stdout piped; stderr too, if piped, for the
 * reason): rejects when it exits first or prints none within `timeoutMs`.
 */
export function apiUrlOf(child: ChildProcess, timeoutMs: number): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    let output = '';
    const done = (err: Error | null, url?: string) => {
      clearTimeout(timer);
      child.stdout?.off('data', read);
      child.stderr?.off('data', read);
      child.off('exit', exited);
      child.stdout?.resume();
      child.stderr?.resume();
      if (err) reject(err); else resolve(url!);
    };
    const read = (chunk: Buffer) => {
      output += chunk.toString('utf8');
      const m = /API\s+(http:\/\/\S+)\/api\/v1/.exec(output);
      if (m) done(null, m[1]);
    };
    const exited = (code: number | null) => done(new Error(`drivewire serve exited (${code}) before it printed its API URL:\n${output}`));
    const timer = setTimeout(() => done(new Error(`drivewire serve printed no API URL within ${timeoutMs} ms:\n${output}`)), timeoutMs);
    child.stdout?.on('data', read);
    child.stderr?.on('data', read);
    child.once('exit', exited);
  });
}

/** What this process serves, by part (issue 14): the API banner and "Try: curl" only where the API runs. */
export function banner(platform: Platform): string[] {
  const { config, apiUrl, credentialsFile: c } = platform;
  const lines = ['', `drivewire is running: ${config.only.join(', ')}`, ''];
  if (runs(config, 'api')) lines.push(`  API        ${apiUrl}/api/v1   (docs: ${apiUrl}/docs)`, `  console    ${apiUrl}/console/`);
  else lines.push(`  health     ${apiUrl}/health   (metrics: ${apiUrl}/metrics)`);
  lines.push(...platform.parts.flatMap((p) => Object.entries(p.urls ?? {}).map(([k, v]) => `  ${k.padEnd(10)} ${v}`)));
  if (runs(config, 'gateway') && c.mqttUrl) lines.push(`  announced  ${c.mqttUrl}   (for workers' simulator runs; other hosts: --mqtt-public-url)`);
  if (runs(config, 'workers')) lines.push('  workers    webhook notifications, simulator runs');
  lines.push(`  database   ${config.databaseUrl ? maskedDatabaseUrl(config.databaseUrl) : `embedded (PGlite) in ${embeddedDbDir(config.dataDir)}`}`, '');
  if (!runs(config, 'api')) {
    // The first part on an empty database created them: say where, without printing the secret here.
    if (platform.credentialsCreated) lines.push(`  Created the default application and admin token: ${credentialsPath(config.dataDir)}`, '');
    return lines;
  }
  const app = c.application;
  if (app) {
    lines.push(`  Application (${app.kind}) "${app.name}"`, `    id      ${app.id}`, `    secret  ${app.secret}`,
      `  Credentials: ${credentialsPath(config.dataDir)}`,
      `  Console: ${apiUrl}/console/  (sign in with the id and secret above)`, '',
      `  Try: curl -u ${app.id}:${app.secret} ${apiUrl}/api/v1/devices`, '');
  } else {
    lines.push('  The default application and the admin token were issued by the first part started on this database',
      '  (its credentials.json); nothing was rotated. New ones: drivewire credentials rotate', '');
  }
  return lines;
}

/** How often an idle `serve` hands freed heap memory back. */
const TRIM_EVERY_MS = 15_000;

export function registerServeCommands(program: Command): void {
  const serve = dbOptions(program.command('serve').description('start the platform: API, MQTT gateway and workers'))
    .option('--http-port <port>', 'HTTP port of the API (default 3000)')
    .option('--host <host>', 'interface to listen on (default 0.0.0.0)')
    .option('--public-url <url>', 'public base URL of the API used in links (default: an API part\'s http://localhost:<port>; other parts use the URL the API announced)')
    .option('--mqtt-port <port>', 'MQTT TCP port (default 1883)')
    .option('--mqtt-ws-port <port>', 'MQTT over WebSocket port (off unless given)')
    .option('--mqtt-tls-port <port>', 'MQTT over TLS port (with --mqtt-tls-cert/--mqtt-tls-key)')
    .option('--mqtt-tls-cert <file>', 'TLS certificate (PEM)')
    .option('--mqtt-tls-key <file>', 'TLS private key (PEM)')
    .option('--mqtt-redis-url <url>', 'Redis shared by several gateway processes (redis://host:6379/0[?prefix=name]; default: in-memory)')
    .option('--mqtt-max-packet-bytes <bytes>', 'largest MQTT packet a connection may send; larger cuts it (default: max payload + 65536)')
    .option('--mqtt-connect-timeout-ms <ms>', 'close connections that send no CONNECT within this time (default 10000)')
    .option('--mqtt-max-subscribe-filters <n>', 'filters one SUBSCRIBE may carry; more closes the connection (default 8)')
    .option('--mqtt-max-topic-bytes <bytes>', 'longest topic a PUBLISH may have; a longer one closes the connection; topics are cut to it in logs (default 256)')
    .option('--mqtt-log-throttle-ms <ms>', 'log a client\'s repeated refusal once per this window, with the count of the others (default 10000)')
    .option('--mqtt-credentials-check-ms <ms>', 'check every MQTT session\'s device credentials this often; a changed secret closes the session (default 10000)')
    .option('--db-acquire-timeout-ms <ms>', 'an API request that gets no database connection within this time is answered 503 (default 5000)')
    .option('--http-body-limit-bytes <bytes>', 'largest HTTP request body; a larger one is answered 413 (default 1048576)')
    .option('--http-request-timeout-ms <ms>', 'a whole HTTP request (headers and body) must arrive within this time, else 408 (default 30000)')
    .option('--http-headers-timeout-ms <ms>', 'HTTP request headers must arrive within this time, else 408 (default 10000)')
    .option('--http-body-min-bytes-per-sec <n>', 'least average rate of a request body after the grace, else 408; 0 = none (default 240)')
    .option('--http-body-grace-ms <ms>', 'time a request body may take before the minimum rate applies (default 5000)')
    .option('--http-max-connections-per-ip <n>', 'open HTTP connections one client address may hold; more are answered 503; 0 = no cap (default 256)')
    .option('--streams-per-application <n>', 'live streams one application may hold open at once; one more is answered 429 (default 32)')
    .option('--stream-max-buffered-bytes <bytes>', 'a live stream with more unsent than this (a client not reading) is closed, code 1013 (default 1048576)')
    .option('--device-frames-per-second <n>', 'frames/s a device may publish; over it QoS 0 is refused, QoS 1 waits for its PUBACK (default 500; 0 = no limit)')
    .option('--device-frames-burst <n>', 'frames a device may publish at once above its rate (default 1000)')
    .option('--device-bytes-per-second <n>', 'payload bytes/s a device may publish (default 1048576; 0 = no limit)')
    .option('--device-bytes-burst <n>', 'payload bytes a device may publish at once above its rate (default 2097152)')
    .option('--device-waiting-bytes <bytes>', 'payload bytes a device may have waiting for their turn over its rate; one more closes the connection (default 1048576)')
    .option('--only <parts>', 'run only these parts: all, or a comma-separated list of api, gateway, workers (e.g. api,workers)')
    .option('--service-prefix <prefix>', 'transaction service name prefix (default drivewire)')
    .option('--allow-private-webhooks', 'allow webhook URLs on loopback/private addresses')
    .option('--simulator-mqtt-url <url>', 'MQTT URL the run scheduler connects dummies to (default: this gateway, else the one the gateways announced)')
    .option('--mqtt-public-url <url>', 'MQTT URL this gateway announces to the other parts (default: its own listener)')
    .option('--tile-url <template>', 'map tiles of the web console, {z}/{x}/{y} template (default OpenStreetMap)')
    .option('--tile-attribution <html>', 'attribution shown under the console map tiles')
    .option('--log-level <level>', 'fatal|error|warn|info|debug|trace|silent');
  for (const k of SERVICE_KINDS) serve.option(`--url-${k} <url>`, `link base of the ${k} service (default: the public URL)`);
  serve.action(async (o) => {
    const config = configFromOptions(o);
    const log = createLogger(config.logLevel, process.stdout.isTTY ? await prettyStream() : undefined);
    // Imported here, not at the top: every other command starts without loading the whole platform.
    const { startPlatform } = await import('../platform.js');
    const platform = await startPlatform(config, log);
    const lines = banner(platform);
    process.stdout.write(lines.join('\n') + '\n');
    // freed malloc memory handed back while idle (lib/malloc-trim.ts): the start's alone is ~100 MB
    const trimming = await trimWhenIdle(TRIM_EVERY_MS);
    const stop = async () => {
      process.stdout.write('Stopping...\n');
      await trimming?.stop();
      await platform.close();
      process.exit(0);
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });

  const credentials = program.command('credentials').description('the default application and the admin token');
  dbOptions(credentials.command('rotate').description('issue a new default-application secret and admin token (the old ones stop working)'))
    .action(async (o) => {
      const config = configFromOptions(o);
      const { migrateLatest, openConfiguredDatabase, repositories } = await import('../../db/index.js');
      const db = await openConfiguredDatabase(config);
      try {
        await migrateLatest(db.knex);
        const c = await rotateCredentials(db.knex, repositories(db.knex), config.dataDir);
        process.stdout.write(`Rotated. Application ${c.application!.id}\n  secret       ${c.application!.secret}\n  admin token  ${c.adminToken}\n  written to   ${credentialsPath(config.dataDir)}\n`);
      } finally {
        await db.close();
      }
    });

  dbOptions(program.command('migrate').description('apply database migrations')).action(async (o) => {
    const config = configFromOptions(o);
    const { migrateLatest, openConfiguredDatabase } = await import('../../db/index.js');
    const db = await openConfiguredDatabase(config, (m) => process.stderr.write(`drivewire: ${m}\n`));
    try {
      const applied = await migrateLatest(db.knex);
      process.stdout.write(applied.length ? `Applied: ${applied.join(', ')}\n` : 'Already up to date\n');
    } finally {
      await db.close();
    }
  });
}
