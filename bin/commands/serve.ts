import type { ChildProcess } from 'node:child_process';
import type { Command } from 'commander';
import { embeddedDbDir } from '../../lib/config.js';
import { maskedDatabaseUrl } from '../../lib/database-url.js';
import { createLogger } from '../../lib/logger.js';
import { trimWhenIdle } from '../../lib/malloc-trim.js';
import { credentialsPath, rotateCredentials } from '../credentials.js';
import type { Platform } from '../platform.js';
import { runs } from '../roles.js';
import { configOf, withSettings } from '../settings.js';

/** The settings of the database: the commands that open it without serving take only these. */
const DATABASE_SETTINGS = ['dataDir', 'databaseUrl'] as const;

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

/** What this process serves, by part: the API banner and "Try: curl" only where the API runs. */
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
  const serve = withSettings(program.command('serve').description('start the platform: API, MQTT gateway and workers'))
    .addHelpText('after', '\nEvery setting: docs/reference/configuration.md.');
  serve.action(async (_o, cmd: Command) => {
    const config = configOf(cmd);
    const log = createLogger(config.logLevel, process.stdout.isTTY ? await prettyStream() : undefined);
    // Imported here, not at the top: every other command starts without loading the whole platform.
    const { startPlatform } = await import('../platform.js');
    const platform = await startPlatform(config, log);
    const lines = banner(platform);
    process.stdout.write(lines.join('\n') + '\n');
    // freed malloc memory handed back while idle (lib/malloc-trim.ts): the start alone frees a lot of it
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
  withSettings(credentials.command('rotate').description('issue a new default-application secret and admin token (the old ones stop working)'), DATABASE_SETTINGS)
    .action(async (_o, cmd: Command) => {
      const config = configOf(cmd);
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

  withSettings(program.command('migrate').description('apply database migrations'), DATABASE_SETTINGS).action(async (_o, cmd: Command) => {
    const config = configOf(cmd);
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
