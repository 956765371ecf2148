import { describe, expect, it } from 'vitest';
import * as root from './index.ts';
import * as metrics from './metrics.ts';
import * as postgres from './postgres.ts';

describe('the package entries', () => {
  it("leasehold/postgres and leasehold/metrics export the root's own objects (the root keeps exporting them all)", () => {
    for (const entry of [postgres, metrics]) {
      for (const [name, value] of Object.entries(entry)) expect([name, value]).toEqual([name, (root as Record<string, unknown>)[name]]);
    }
    expect(Object.keys(postgres).sort()).toEqual(['ConnectionError', 'MissingDependencyError', 'OpenError', 'PgStore', 'openWorkQueue']);
    expect(Object.keys(metrics).sort()).toEqual(['MissingDependencyError', 'PROMETHEUS_CONTENT_TYPE', 'registerOtelSignals', 'renderPrometheus', 'scrapePrometheus']);
  });

  it('the root exports the typed error of a missing optional package', () => {
    expect(new root.MissingDependencyError('PostgreSQL', ['pg'])).toBeInstanceOf(root.LeaseholdError);
  });
});
