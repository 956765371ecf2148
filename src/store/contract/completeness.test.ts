/**
 * The store contract suite stays complete (issue 36 item 4): every StoreTx method has a
 * `describe('<method>', ...)` block in a file of src/store/contract, or is named in UNCOVERED below with
 * the reason. The list of methods is checked three ways: against the interface at compile time
 * (a method added to StoreTx and not to STORE_TX_METHODS fails `tsc`), and against the public methods
 * both implementations define (SqliteStatements, PgStatements) at run time.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PgStatements } from '../pg-statements.ts';
import { SqliteStatements } from '../statements.ts';
import type { StoreTx } from '../store.ts';

/** Every method of StoreTx, in the interface's order. */
export const STORE_TX_METHODS = [
  'txSavepoint',
  'txMarkClaimable',
  'taskById',
  'taskByKey',
  'taskListForTenant',
  'taskList',
  'taskListInState',
  'taskCountsByState',
  'taskOccupiedByTenant',
  'taskListEnqueuedBetween',
  'taskLatestVersion',
  'taskNewerVersionExists',
  'taskOlderUnstarted',
  'taskCreate',
  'taskWriteState',
  'counterLive',
  'counterLiveAdjust',
  'claimHolding',
  'claimOverdueLeases',
  'claimAnyReady',
  'claimFirstReadyTenant',
  'claimNextReadyTenant',
  'claimLevelHead',
  'claimReadyHeads',
  'claimLevelNext',
  'sessionOlderHolders',
  'sessionBusy',
  'claimCandidate',
  'holderRow',
  'holderHeartbeat',
  'holderBumpEventSeq',
  'taskRequestCancel',
  'eventAppend',
  'eventListForTask',
  'eventList',
  'eventCursor',
  'eventListSince',
  'rejectionInsert',
  'rejectionList',
  'checkpointInsert',
  'checkpointLast',
  'checkpointLastFlags',
  'checkpointLastUsage',
  'holdClose',
  'creditInsert',
  'holdList',
  'holdListStale',
  'effectByKey',
  'effectInsert',
  'effectList',
  'taskFailureReasons',
  'deadLetterInsert',
  'deadLetterList',
  'deadLetterTask',
  'taskResetForRedrive',
  'budgetLevelGet',
  'budgetLevelPut',
  'budgetLevelList',
  'reservationInsert',
  'reservationAdd',
  'reservationSetConsumed',
  'reservationListHeld',
  'reservationRelease',
  'reservationList',
  'serviceGet',
  'serviceAdd',
  'taskServiceCharged',
  'taskAddServiceCharged',
  'tenantHasLive',
  'serviceList',
  'tenantPauseList',
  'tenantPause',
  'tenantResume',
  'taskDeferredSet',
  'taskDefer',
  'admissionInsert',
  'admissionList',
  'signalBump',
  'signalList',
  'taskHoldingSince',
  'taskReadyDepth',
  'taskOldestReady',
  'taskOldestEligibleReady',
  'taskListRecent',
  'creditList',
  'migrationList',
] as const satisfies readonly (keyof StoreTx)[];

/** Compile-time: a StoreTx method missing from STORE_TX_METHODS makes this `never` fail to hold `true`. */
type Unlisted = Exclude<keyof StoreTx, (typeof STORE_TX_METHODS)[number]>;
const everyMethodListed: [Unlisted] extends [never] ? true : Unlisted = true;

/**
 * Methods with no contract case yet, each with why. Never silent: the completeness test fails both when
 * a method is missing from the suite and not listed here, and when a method listed here has a case.
 */
export const UNCOVERED: Readonly<Partial<Record<(typeof STORE_TX_METHODS)[number], string>>> = {};

/** The public methods an implementation's prototype defines (private helpers are left out by name). */
function prototypeMethods(prototype: object, privateNames: readonly string[]): string[] {
  return Object.getOwnPropertyNames(prototype).filter((name) => name !== 'constructor' && typeof Reflect.get(prototype, name) === 'function' && !privateNames.includes(name));
}

/** The method names the contract files give a describe block of their own: `describe('<name>', ...)`. */
function describedMethods(): Set<string> {
  const folder = import.meta.dirname;
  const names = new Set<string>();
  for (const file of readdirSync(folder).filter((name) => name.endsWith('.test.ts') && name !== 'completeness.test.ts')) {
    for (const match of readFileSync(join(folder, file), 'utf8').matchAll(/\bdescribe\(\s*'([A-Za-z]+)'/g)) names.add(match[1]!);
  }
  return names;
}

describe('the store contract suite covers StoreTx', () => {
  it('lists every StoreTx method once (checked against the interface by tsc)', () => {
    expect(everyMethodListed).toBe(true);
    expect(new Set(STORE_TX_METHODS).size).toBe(STORE_TX_METHODS.length);
  });

  it('lists exactly the public methods both stores implement', () => {
    const sqlite = prototypeMethods(SqliteStatements.prototype, ['rowsInState', 'statement', 'run', 'send', 'sendOne', 'recalled', 'answeredAhead']);
    const pg = prototypeMethods(PgStatements.prototype, ['q', 'together', 'remember', 'recall', 'defer', 'sendOne', 'recalled', 'flush', 'failed', 'takePending', 'control', 'rollbackTo', 'answeredFirst', 'lockFirst', 'predictEnqueue', 'predictClaim', 'batchOf', 'belowHead', 'run', 'holdingWithAhead', 'send', 'answeredAhead']);
    expect([...sqlite].sort()).toEqual([...STORE_TX_METHODS].sort());
    expect([...pg].sort()).toEqual([...STORE_TX_METHODS].sort());
  });

  it('has a describe block for every method, except those UNCOVERED names with a reason', () => {
    const described = describedMethods();
    const missing = STORE_TX_METHODS.filter((name) => !described.has(name) && UNCOVERED[name] === undefined);
    expect(missing, 'StoreTx methods with no contract case (add a describe block, or list them in UNCOVERED with the reason)').toEqual([]);
    const stale = Object.keys(UNCOVERED).filter((name) => described.has(name));
    expect(stale, 'methods listed UNCOVERED that now have a contract case: remove them from UNCOVERED').toEqual([]);
    const unknown = [...described].filter((name) => !(STORE_TX_METHODS as readonly string[]).includes(name) && /^[a-z]/.test(name));
    expect(unknown, 'describe blocks named like a method StoreTx does not have').toEqual([]);
  });

  it('reports how many methods are covered', () => {
    const described = describedMethods();
    const covered = STORE_TX_METHODS.filter((name) => described.has(name));
    console.log(`store contract: ${covered.length} of ${STORE_TX_METHODS.length} StoreTx methods covered; uncovered: ${Object.keys(UNCOVERED).join(', ') || 'none'}`);
    expect(covered.length + Object.keys(UNCOVERED).length).toBe(STORE_TX_METHODS.length);
  });
});
