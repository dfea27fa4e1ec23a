import { CommanderError } from 'commander';
import { ConfigError } from '../lib/config.js';
import { CliError } from './client.js';
import { PortInUseError } from '../lib/errors.js';
import { RedisUnavailableError } from '../gateway/redis.js';
import { DataDirLockedError } from '../db/data-dir-lock.js';
import { DatabaseUnavailableError } from '../db/connection.js';
import { createProgram } from './program.js';

try {
  await createProgram().parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) process.exit(err.exitCode);
  if (err instanceof CliError || err instanceof ConfigError || err instanceof PortInUseError || err instanceof RedisUnavailableError
    || err instanceof DataDirLockedError || err instanceof DatabaseUnavailableError) {
    process.stderr.write(`drivewire: ${err.message}\n`);
  } else {
    process.stderr.write(`drivewire: unexpected error: ${(err as Error).message}\n`);
  }
  process.exit(1);
}
