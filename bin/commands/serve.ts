import path from 'node:path';
import { Option, type Command } from 'commander';
import { loadConfig } from '../../lib/config.js';
import { createLogger } from '../../lib/logger.js';
import { SERVICE_KINDS } from '../../lib/services.js';
import { credentialsPath } from '../credentials.js';

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

export function registerServeCommands(program: Command): void {
  const serve = dbOptions(program.command('serve').description('start the platform: API, MQTT gateway and workers'))
    .option('--http-port <port>', 'HTTP port of the API (default 3000)')
    .option('--host <host>', 'interface to listen on (default 0.0.0.0)')
    .option('--public-url <url>', 'public base URL used in links (default http://localhost:<port>)')
    .option('--mqtt-port <port>', 'MQTT TCP port (default 1883)')
    .option('--mqtt-ws-port <port>', 'MQTT over WebSocket port (off unless given)')
    .option('--mqtt-tls-port <port>', 'MQTT over TLS port (with --mqtt-tls-cert/--mqtt-tls-key)')
    .option('--mqtt-tls-cert <file>', 'TLS certificate (PEM)')
    .option('--mqtt-tls-key <file>', 'TLS private key (PEM)')
    .option('--mqtt-redis-url <url>', 'Redis shared by several gateway processes (redis://host:6379/0[?prefix=name]; default: in-memory)')
    .option('--mqtt-max-packet-bytes <bytes>', 'largest MQTT packet a connection may send; larger cuts it (default: max payload + 65536)')
    .option('--mqtt-connect-timeout-ms <ms>', 'close connections that send no CONNECT within this time (default 10000)')
    .addOption(new Option('--only <part>', 'run one part only').choices(['all', 'api', 'gateway', 'workers']))
    .option('--service-prefix <prefix>', 'transaction service name prefix (default drivewire)')
    .option('--allow-private-webhooks', 'allow webhook URLs on loopback/private addresses')
    .option('--simulator-mqtt-url <url>', 'MQTT URL the run scheduler connects dummies to (default: this gateway)')
    .option('--log-level <level>', 'fatal|error|warn|info|debug|trace|silent');
  for (const k of SERVICE_KINDS) serve.option(`--url-${k} <url>`, `link base of the ${k} service (default: the public URL)`);
  serve.action(async (o) => {
    const config = configFromOptions(o);
    const log = createLogger(config.logLevel, process.stdout.isTTY ? await prettyStream() : undefined);
    // Imported here, not at the top: every other command starts without loading the whole platform.
    const { startPlatform } = await import('../platform.js');
    const platform = await startPlatform(config, log);
    const c = platform.credentials;
    const lines = [
      '', 'drivewire is running', '',
      `  API        ${platform.apiUrl}/api/v1   (docs: ${platform.apiUrl}/docs)`,
      ...platform.parts.flatMap((p) => Object.entries(p.urls ?? {}).map(([k, v]) => `  ${k.padEnd(10)} ${v}`)),
      `  database   ${config.databaseUrl ? config.databaseUrl.replace(/\/\/[^@]*@/, '//***@') : `embedded (PGlite) in ${path.join(config.dataDir, 'pgdata')}`}`,
      '', `  Application (${c.application.kind}) "${c.application.name}"`,
      `    id      ${c.application.id}`, `    secret  ${c.application.secret}`,
      `  Credentials: ${credentialsPath(config.dataDir)}`, '',
      `  Try: curl -u ${c.application.id}:${c.application.secret} ${platform.apiUrl}/api/v1/devices`, '',
    ];
    process.stdout.write(lines.join('\n') + '\n');
    const stop = async () => {
      process.stdout.write('Stopping...\n');
      await platform.close();
      process.exit(0);
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });

  dbOptions(program.command('migrate').description('apply database migrations')).action(async (o) => {
    const config = configFromOptions(o);
    const { migrateLatest, openDatabase } = await import('../../db/index.js');
    const db = await openDatabase({
      databaseUrl: config.databaseUrl, pgliteDir: path.join(config.dataDir, 'pgdata'),
      warn: (m) => process.stderr.write(`drivewire: ${m}\n`),
    });
    try {
      const applied = await migrateLatest(db.knex);
      process.stdout.write(applied.length ? `Applied: ${applied.join(', ')}\n` : 'Already up to date\n');
    } finally {
      await db.close();
    }
  });
}
