// The contract of a long-running part of the platform (gateway, workers, scheduler): what it is
// started with and what it answers. Here rather than in bin/ so the parts need not import the CLI.
import type { Config } from '../lib/config.js';
import type { Logger } from '../lib/logger.js';
import type { Bus } from '../lib/bus.js';
import type { Db } from './connection.js';
import type { Repositories } from './index.js';

export interface PartDeps { config: Config; db: Db; repos: Repositories; log: Logger; bus: Bus }

/** A long-running part of the platform (gateway, workers): started with its deps, stopped with close(). */
export interface Part {
  name: string;
  close(): Promise<void>;
  health?(): Promise<Record<string, boolean>>;
  metrics?(): Promise<string>;
  /** URLs the part can be reached at, printed at start-up. */
  urls?: Record<string, string>;
}
