import type { Knex } from 'knex';
import * as m001 from './001_core.js';

export const MIGRATIONS: Record<string, Knex.Migration> = {
  '001_core': m001,
};
