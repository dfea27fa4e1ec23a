import type { BenchOptions, BenchScenario } from './types.js';

export type { BenchOptions, BenchScenario };

type Loader = () => Promise<BenchScenario>;

/**
 * The scenarios, in one explicit list. Each is loaded only when run, so listing them (and every
 * other CLI command) does not load the whole platform.
 */
export const BENCH_SCENARIOS: { name: string; description: string; load: Loader }[] = [
  { name: 'ingest', description: 'N devices publish QoS 1 frames; frames/s stored and publish→commit latency',
    load: async () => (await import('./ingest.bench.js')).ingestScenario },
  { name: 'rules', description: 'N devices with M rules each; rule events/s and publish→webhook latency',
    load: async () => (await import('./rules.bench.js')).rulesScenario },
  { name: 'api', description: 'GET …/messages under autocannon, idle or during ingest; ratio to bare Fastify + pg',
    load: async () => (await import('./api.bench.js')).apiScenario },
];
