/**
 * The StoreHealth contract (see src/store/store-probe.ts): GET /health/ready's database check and the
 * tasks-by-state gauge, one suite for every store, run by store-health.contract.test.ts. What one probe does
 * beyond it (SQLite's deleted or replaced file) is tested beside it.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { StoreHealth } from "../../src/store/sqlite-probe";
import type { TaskState } from "../../src/protocol/types";
import type { TaskStore } from "../../src/tasks/task-store";

export interface OpenedHealth {
  health: StoreHealth;
  /** The task store the probe looks at. */
  tasks: TaskStore;
  /** How the probe names the database in its details (a path, a URL without password). */
  where: string;
  /** Has another connection hold the probe's table locked, until the returned function is called. */
  lockOut(): Promise<() => Promise<void>>;
  close(): Promise<void> | void;
}

export function storeHealthContract(name: string, open: () => Promise<OpenedHealth> | OpenedHealth): void {
  describe(`StoreHealth contract: ${name}`, () => {
    let opened: OpenedHealth;
    beforeEach(async () => {
      opened = await open();
    });
    afterEach(async () => {
      opened.health.stop();
      await opened.close();
    });

    it("says a healthy store takes a write, naming it", async () => {
      expect(await opened.health.writable()).toEqual({ ok: true, detail: `a write to ${opened.where} committed` });
    });

    it("counts the stored tasks by state, as the task store wrote them", async () => {
      const states: TaskState[] = [
        "TASK_STATE_COMPLETED",
        "TASK_STATE_COMPLETED",
        "TASK_STATE_FAILED",
        "TASK_STATE_WORKING",
      ];
      for (const [i, state] of states.entries()) {
        const id = `01J00000000000000000000${i}AA`.slice(0, 26);
        const made = await opened.tasks.create({
          id,
          contextId: id,
          owner: "alpha",
          message: { messageId: `m${i}`, role: "ROLE_USER", parts: [{ text: "x" }] },
          executor: "echo",
          timestamp: new Date().toISOString(),
        });
        await made.committed;
        await opened.tasks.record(id, { status: { state, timestamp: new Date().toISOString() } });
      }
      const counts = Object.fromEntries((await opened.health.countByState()).map((r) => [r.state, r.n]));
      expect(counts).toEqual({ TASK_STATE_COMPLETED: 2, TASK_STATE_FAILED: 1, TASK_STATE_WORKING: 1 });
    });

    it("answers not ready, naming the store, when another connection holds it locked; ready again once it lets go", async () => {
      const unlock = await opened.lockOut();
      let result;
      try {
        result = await opened.health.writable();
      } finally {
        await unlock();
      }
      expect(result.ok).toBe(false);
      expect(result.detail).toContain(`a write to ${opened.where} failed`);
      expect((await opened.health.writable()).ok).toBe(true);
    });
  });
}
