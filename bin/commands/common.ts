import type { Command } from 'commander';
import { withSettings } from '../settings.js';

/** Every client command takes --api-url, --data-dir (where credentials.json is) and --json. */
export function withClientOptions(cmd: Command): Command {
  cmd.option('--api-url <url>', 'API base URL (default: from <data-dir>/credentials.json; env: DRIVEWIRE_API_URL)');
  return withSettings(cmd, ['dataDir'], false).option('--json', 'print JSON for scripts');
}
