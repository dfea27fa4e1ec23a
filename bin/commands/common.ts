import type { Command } from 'commander';

/** Every client command takes --api-url, --data-dir and --json (issue 2). */
export function withClientOptions(cmd: Command): Command {
  return cmd
    .option('--api-url <url>', 'API base URL (default: from <data-dir>/credentials.json)')
    .option('--data-dir <dir>', 'data directory holding credentials.json', process.env.DRIVEWIRE_DATA_DIR ?? '.drivewire')
    .option('--json', 'print JSON for scripts');
}
