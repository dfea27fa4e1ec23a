import { Command } from 'commander';
import { registerServeCommands } from './commands/serve.js';
import { registerAdminCommands } from './commands/admin.js';
import { registerBenchCommands } from './commands/bench.js';
import { registerSimulatorCommands } from './commands/dummies.js';
import { registerTripCommands } from './commands/trips.js';
import { registerExportCommands } from './commands/export.js';
import { registerRetentionCommands } from './commands/retention.js';
import { registerRuleCommands } from './commands/rules.js';

/** The `drivewire` command and all of its subcommands: what bin/cli.ts runs and docs/reference/cli.md describes. */
export function createProgram(): Command {
  const program = new Command('drivewire')
    .description('drivewire: open connected-vehicle platform')
    .showHelpAfterError()
    .exitOverride();
  // Command groups, in one explicit list.
  for (const register of [registerServeCommands, registerAdminCommands, registerBenchCommands, registerSimulatorCommands, registerTripCommands,
    registerExportCommands, registerRetentionCommands, registerRuleCommands]) {
    register(program);
  }
  return program;
}
