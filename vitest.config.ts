import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    pool: 'forks',
    // One process per worker for all its files, not one per file: each file's fresh process spent seconds importing
    // the platform again (fastify, aedes, PGlite's JavaScript), a large share of the suite's time. Each file still
    // opens its own database and platform, and a file that changes process state (the environment, a listener) puts
    // it back.
    isolate: false,
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 120_000,
    reporters: ['default'],
  },
});
