/**
 * RetentionSweeper: finished tasks past the retention age go, in batches, with what other stores keep for
 * them; nothing else goes; retention 0 deletes nothing. Over the in-memory store (the contract suite holds the
 * SQLite store to the same deleteFinished).
 */
import { describe, expect, it } from "vitest";
import { MemoryTaskStore } from "../../src/store/memory-task-store";
import { ulidFactory } from "../../src/clock";
import { RetentionSweeper } from "../../src/tasks/retention";
import { createLogger } from "../../src/log";

const DAY = 86_400_000;
const NOW = Date.parse("2026-06-01T00:00:00.000Z");

async function seed(store: MemoryTaskStore, finishedOld: number, other: number): Promise<string[]> {
  const old: string[] = [];
  for (let i = 0; i < finishedOld + other; i++) {
    const at = NOW - (40 + i) * DAY;
    const id = ulidFactory(() => at)();
    await (
      await store.create({
        id,
        contextId: id,
        owner: "alpha",
        message: { messageId: id, role: "ROLE_USER", parts: [{ text: "x" }] },
        executor: "echo",
        timestamp: new Date(at).toISOString(),
      })
    ).committed;
    const state = i < finishedOld ? "TASK_STATE_COMPLETED" : "TASK_STATE_INPUT_REQUIRED";
    await store.record(id, { status: { state, timestamp: new Date(at + DAY).toISOString() } });
    if (i < finishedOld) old.push(id);
  }
  return old;
}

describe("RetentionSweeper", () => {
  it("deletes every finished task past the age in batches, tells forget() each batch, logs the count once", async () => {
    const store = new MemoryTaskStore();
    const old = await seed(store, 7, 2);
    const batches: string[][] = [];
    const lines: string[] = [];
    const sweeper = new RetentionSweeper(store, {
      maxAgeMs: 30 * DAY,
      batch: 3,
      now: () => NOW,
      forget: (ids) => void batches.push(ids),
      log: createLogger((l) => lines.push(l)),
    });
    expect(await sweeper.sweep()).toBe(7);
    expect(batches.map((b) => b.length)).toEqual([3, 3, 1]);
    expect(batches.flat().sort()).toEqual([...old].sort());
    expect((await store.list("alpha", {})).totalSize).toBe(2);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain("deleted finished tasks past the retention age count=7");
    expect(await sweeper.sweep()).toBe(0);
    expect(lines).toHaveLength(1); // nothing deleted, nothing said
  });

  it("keeps finished tasks younger than the age", async () => {
    const store = new MemoryTaskStore();
    await seed(store, 3, 0);
    const sweeper = new RetentionSweeper(store, { maxAgeMs: 365 * DAY, now: () => NOW });
    expect(await sweeper.sweep()).toBe(0);
    expect((await store.list("alpha", {})).totalSize).toBe(3);
  });

  it("with retention 0, start() never sweeps", async () => {
    const calls: string[] = [];
    const sweeper = new RetentionSweeper(
      { deleteFinished: async (before) => (calls.push(before), []) },
      { maxAgeMs: 0 },
    );
    sweeper.start();
    await new Promise<void>((r) => setImmediate(r));
    await sweeper.stop();
    expect(calls).toEqual([]);
  });

  it("start() sweeps at once; a failing store is logged and does not throw", async () => {
    const lines: string[] = [];
    let swept!: () => void;
    const attempted = new Promise<void>((r) => (swept = r));
    const sweeper = new RetentionSweeper(
      {
        deleteFinished: async () => {
          swept();
          throw new Error("disk I/O error");
        },
      },
      { maxAgeMs: DAY, log: createLogger((l) => lines.push(l)) },
    );
    sweeper.start();
    await attempted;
    await sweeper.stop();
    expect(lines.join("")).toContain(
      'retention sweep failed; trying again at the next interval reason="disk I/O error"',
    );
  });
});
