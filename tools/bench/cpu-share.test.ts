import { describe, expect, it } from 'vitest';
import { ceilingsOf, classOf, profileShares, sharesOf, sharesText, type CpuProfile } from './cpu-share.ts';

const frame = (functionName: string, url: string) => ({ functionName, url });

describe('where a seed\'s CPU time goes', () => {
  it('classes a leaf frame: the store\'s statements and better-sqlite3 are SQL, the rest of src/ is core, sim/ and Node are harness', () => {
    expect(classOf(frame('stateWrite', 'file:///work/main/src/store/statements.ts'))).toBe('sql');
    expect(classOf(frame('sqliteTransaction', 'file:///work/main/node_modules/better-sqlite3/lib/methods/transaction.js'))).toBe('sql');
    expect(classOf(frame('claimIn', 'file:///work/main/src/queue/claim.ts'))).toBe('core');
    expect(classOf(frame('append', 'file:///work/main/sim/history.ts'))).toBe('history');
    expect(classOf(frame('addLines', 'file:///work/main/sim/trace-hash.ts'))).toBe('history');
    expect(classOf(frame('check', 'file:///work/main/sim/checkers/i5-priority.ts'))).toBe('checkers');
    expect(classOf(frame('schedule', 'file:///work/main/sim/event-loop.ts'))).toBe('harness');
    expect(classOf(frame('x', 'file:///work/main/node_modules/pkg/src/thing.ts'))).toBe('harness');
    expect(classOf(frame('(garbage collector)', ''))).toBe('gc');
    expect(classOf(frame('(idle)', ''))).toBe('idle');
    expect(classOf(frame('runMicrotasks', ''))).toBe('harness');
  });

  it('weights each sample by its time', () => {
    const profile: CpuProfile = {
      nodes: [
        { id: 1, callFrame: frame('stateWrite', 'file:///r/src/store/statements.ts') },
        { id: 2, callFrame: frame('claimIn', 'file:///r/src/queue/claim.ts') },
        { id: 3, callFrame: frame('schedule', 'file:///r/sim/event-loop.ts') },
      ],
      samples: [1, 2, 3, 1],
      timeDeltas: [30, 10, 40, 20],
    };
    const { samples, shares } = sharesOf(profile);
    expect(samples).toBe(4);
    expect(shares).toEqual({ sql: 0.5, core: 0.1, checkers: 0, history: 0, gc: 0, idle: 0, harness: 0.4 });
  });

  it('counts a native function for the nearest caller with a script: SQLite called by the store is SQL, by the simulator harness', () => {
    const profile: CpuProfile = {
      nodes: [
        { id: 1, callFrame: frame('(root)', ''), children: [2, 4] },
        { id: 2, callFrame: frame('stateWrite', 'file:///r/src/store/statements.ts'), children: [3] },
        { id: 3, callFrame: frame('run', '') },
        { id: 4, callFrame: frame('cursor', 'file:///r/sim/store/fleet.ts'), children: [5] },
        { id: 5, callFrame: frame('get', ''), children: [6] },
        { id: 6, callFrame: frame('(garbage collector)', '') },
      ],
      samples: [3, 5, 6, 1],
      timeDeltas: [10, 10, 10, 10],
    };
    const measured = sharesOf(profile);
    expect(measured.shares).toEqual({ sql: 0.25, core: 0, checkers: 0, history: 0, gc: 0.25, idle: 0, harness: 0.5 });
    expect(sharesText(measured)).toBe('25.0% / 0.0% / 0.0% / 0.0% / 25.0% / 0.0% / 50.0%');
    // A quarter of the time is the core's (all of it SQL): a figure of 0.1 could reach 0.4 at best.
    expect(ceilingsOf(0.1, measured)).toEqual({ freeHarness: 0.4, keepingS6S7: 0.4, freeCore: 0.4 });
  });

  it('profiles work in this process and hands back its error', async () => {
    const measured = await profileShares(async () => {
      let x = 0;
      for (let i = 0; i < 2e6; i++) x += Math.sqrt(i);
      expect(x).toBeGreaterThan(0);
    });
    expect(measured.samples).toBeGreaterThan(0);
    expect(Object.values(measured.shares).reduce((a, b) => a + b, 0)).toBeCloseTo(1, 6);
    await expect(profileShares(async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
  });
});
