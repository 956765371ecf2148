import type { BenchSection } from './registry.ts';
export const pgClaimLatencySection: BenchSection = { id: 'pg-claim-latency', title: 'todo', run: () => ({ metrics: [], context: [], raw: {} }) };
