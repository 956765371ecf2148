/**
 * The store contract, fair share (A3): table `tenant_service` and `tasks.service_charged` — serviceGet,
 * serviceAdd, serviceList, taskServiceCharged, taskAddServiceCharged — and tenantHasLive, each against every
 * store kind (__test-helpers__/harness.ts).
 */
import { describe, expect, it } from 'vitest';
import { STORE_KINDS, claim, contractStore, failedTask, makeUncertain, readyTask } from './__test-helpers__/harness.ts';

describe.each(STORE_KINDS)('fair share on %s', (kind) => {
  const db = contractStore(kind);

  describe('serviceGet', () => {
    it('is 0 for a tenant never charged', async () => {
      expect(await db.scratch((tx) => tx.serviceGet('nobody'))).toBe(0);
    });
  });

  describe('serviceAdd', () => {
    it("creates a tenant's service and adds to it (negative deltas too)", async () => {
      const answer = await db.scratch(function* (tx) {
        yield* tx.serviceAdd('acme', 10);
        yield* tx.serviceAdd('acme', 5);
        yield* tx.serviceAdd('acme', -3);
        yield* tx.serviceAdd('globex', 1);
        return [yield* tx.serviceGet('acme'), yield* tx.serviceGet('globex')];
      });
      expect(answer).toEqual([12, 1]);
    });
  });

  describe('serviceList', () => {
    it('is [] when none, and every tenant with its service in tenant order', async () => {
      const [empty, rows] = await db.scratch(function* (tx) {
        const empty = yield* tx.serviceList();
        yield* tx.serviceAdd('b', 2);
        yield* tx.serviceAdd('a', 1);
        yield* tx.serviceAdd('B', 3);
        yield* tx.serviceAdd('é', 4);
        yield* tx.serviceAdd('z', 5);
        return [empty, yield* tx.serviceList()] as const;
      });
      expect(empty).toEqual([]);
      // Bytewise (UTF-8): SQLite's BINARY and PostgreSQL's COLLATE "C" put 'B' before 'a' and 'z' before 'é'.
      expect(rows).toEqual([
        { tenant: 'B', service: 3 },
        { tenant: 'a', service: 1 },
        { tenant: 'b', service: 2 },
        { tenant: 'z', service: 5 },
        { tenant: 'é', service: 4 },
      ]);
    });
  });

  describe('taskServiceCharged', () => {
    it('is 0 for a new task and for a missing one', async () => {
      const answer = await db.scratch(function* (tx) {
        const id = yield* readyTask(tx);
        return [yield* tx.taskServiceCharged(id), yield* tx.taskServiceCharged(99)];
      });
      expect(answer).toEqual([0, 0]);
    });
  });

  describe('taskAddServiceCharged', () => {
    it("adds to one task's charge (negative deltas too) and leaves the others", async () => {
      const answer = await db.scratch(function* (tx) {
        const a = yield* readyTask(tx);
        const b = yield* readyTask(tx);
        yield* tx.taskAddServiceCharged(a, 40);
        yield* tx.taskAddServiceCharged(a, -15);
        yield* tx.taskAddServiceCharged(99, 1);
        return [yield* tx.taskServiceCharged(a), yield* tx.taskServiceCharged(b)];
      });
      expect(answer).toEqual([25, 0]);
    });
  });

  describe('tenantHasLive', () => {
    it('is true when the tenant has a ready, running or uncertain task other than the one named', async () => {
      const answer = await db.scratch(function* (tx) {
        const none = yield* tx.tenantHasLive('acme', 0);
        const a = yield* readyTask(tx);
        const onlySelf = yield* tx.tenantHasLive('acme', a);
        const ready = yield* tx.tenantHasLive('acme', 0);
        yield* claim(tx, a);
        const running = yield* tx.tenantHasLive('acme', 0);
        yield* makeUncertain(tx, a);
        const uncertain = yield* tx.tenantHasLive('acme', 0);
        yield* failedTask(tx, { tenant: 'ended' });
        return { none, onlySelf, ready, running, uncertain, ended: yield* tx.tenantHasLive('ended', 0), otherTenant: yield* tx.tenantHasLive('globex', 0) };
      });
      expect(answer).toEqual({ none: false, onlySelf: false, ready: true, running: true, uncertain: true, ended: false, otherTenant: false });
    });
  });
});
