import { Command, CommanderError } from 'commander';
import { ConfigError } from '../lib/config.js';
import { CliError } from './client.js';
import { PortInUseError } from '../lib/errors.js';
import { RedisUnavailableError } from '../gateway/redis.js';
import { DataDirLockedError } from '../db/data-dir-lock.js';
import { DatabaseUnavailableError } from '../db/connection.js';
import { registerServeCommands } from './commands/serve.js';
import { registerAdminCommands } from './commands/admin.js';
import { registerBenchCommands } from './commands/bench.js';
import { registerSimulatorCommands } from './commands/dummies.js';
import { registerTripCommands } from './commands/trips.js';

const program = new Command('drivewire')
  .description('drivewire: open connected-vehicle platform')
  .showHelpAfterError()
  .exitOverride();

/** Command groups, in one explicit list. */
for (const register of [registerServeCommands, registerAdminCommands, registerBenchCommands, registerSimulatorCommands, registerTripCommands]) register(program);

try {
  await program.parseAsync(process.argv);
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
