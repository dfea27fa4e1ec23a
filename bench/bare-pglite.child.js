// The start scenario's bare baseline: PGlite with PostGIS alone, configured as the platform configures it
// (the same slim bundle and server settings, given as arguments), started on a data directory in a process of its
// own, with the platform's launcher's memory settings: what the embedded database costs before the platform adds
// anything. Prints `ready` once PostGIS is created (a new directory) or present (a restart); SIGTERM closes it.
// Plain JavaScript: child processes start outside tsx's loader.
import { PGlite } from '@electric-sql/pglite';
import { postgis } from '@electric-sql/pglite-postgis';

const { dataDir, bundle, conf } = JSON.parse(process.argv[2]);
const slim = { name: 'postgis', setup: async (pg, o) => ({ ...(await postgis.setup(pg, o)), bundlePath: new URL(bundle) }) };
const pg = new PGlite({ dataDir, extensions: { postgis: slim }, postgresqlconf: conf });
await pg.waitReady;
await pg.exec('CREATE EXTENSION IF NOT EXISTS postgis');
process.stdout.write('ready\n');
const idle = setInterval(() => undefined, 1 << 30); // an idle PGlite holds nothing that keeps the process alive
process.once('SIGTERM', () => { clearInterval(idle); pg.close().finally(() => process.exit(0)); });
