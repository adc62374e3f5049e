/**
 * What one caller may store: the per-caller quotas (max_caller_tasks, max_caller_bytes) and the free-space
 * floor (min_free_disk), through the request handler on a real SQLite file, with the echo executor. Past a
 * quota a caller's new tasks and messages get RESOURCE_EXHAUSTED naming it, before anything is recorded, and
 * other callers go on; retention gives the room back. Below the floor the caller holding the most is refused
 * first, below half of it everyone; the readiness check and the log say so.
 */
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { EchoExecutor } from "../../src/executors/echo-executor";
import { createLogger } from "../../src/log";
import { A2AError } from "../../src/protocol/errors";
import type { Message, Task } from "../../src/protocol/types";
import { storageCheck } from "../../src/server/readiness";
import type { OpenDatabase } from "../../src/store/database";
import { DiskFloor } from "../../src/store/disk-floor";
import type { SqliteTaskStore } from "../../src/store/sqlite-task-store";
import { StorageQuota, type StorageQuotaOptions } from "../../src/tasks/storage-quota";
import { sqliteTaskStore, taskFixture } from "../helpers/task-fixture";

const as = (name: string) => ({ caller: { name, fingerprint: name } });
const message = (text: string, extra: Partial<Message> = {}): Message => ({
  messageId: crypto.randomUUID(),
  role: "ROLE_USER",
  parts: [{ text }],
  ...extra,
});
const taskOf = (r: unknown) => (r as { task: Task }).task;

async function refusal(p: Promise<unknown>): Promise<A2AError> {
  const err = await p.then(
    () => undefined,
    (e) => e,
  );
  expect(err).toBeInstanceOf(A2AError);
  return err as A2AError;
}

let dir: string;
let database: OpenDatabase;
let store: SqliteTaskStore;
beforeEach(() => {
  ({ dir, database, store } = sqliteTaskStore("a2a-quota-"));
});
afterEach(() => {
  store.flush();
  database.close();
});

function handlerWith(o: Partial<StorageQuotaOptions>, refused: string[] = []) {
  const quota = new StorageQuota(store, {
    maxCallerBytes: 0,
    maxCallerTasks: 0,
    ttlMs: 0,
    onRefused: (l) => refused.push(l),
    ...o,
  });
  const runnerOptions = { maxConcurrent: 4, maxQueued: 100, historyMessages: 5 };
  return taskFixture({ store, executor: new EchoExecutor(), runnerOptions, handlerOptions: { storage: quota } })
    .handler;
}

describe("max_caller_tasks", () => {
  it("refuses a caller's next task once it has as many stored as its quota, naming it; another caller goes on; retention frees room", async () => {
    const refused: string[] = [];
    const handler = handlerWith({ maxCallerTasks: 3 }, refused);
    for (let i = 0; i < 3; i++)
      expect(taskOf(await handler.sendMessage({ message: message(`t${i}`) }, as("alpha"))).status.state).toBe(
        "TASK_STATE_COMPLETED",
      );
    const before = (await store.list("alpha", {})).totalSize;
    const err = await refusal(handler.sendMessage({ message: message("one more") }, as("alpha")));
    expect(err.code).toBe(-32603);
    expect(err.reason).toBe("RESOURCE_EXHAUSTED");
    expect(err.metadata).toMatchObject({ limit: "max_caller_tasks", retry: "later" });
    expect(err.message).toBe(
      "alpha has 3 tasks stored on this node, its quota (max_caller_tasks = 3); new tasks are refused until retention deletes finished ones (retention_days), or this node's operator raises the quota",
    );
    expect((await store.list("alpha", {})).totalSize).toBe(before); // nothing recorded
    expect(refused).toEqual(["max_caller_tasks"]);
    expect(taskOf(await handler.sendMessage({ message: message("beta's") }, as("beta"))).status.state).toBe(
      "TASK_STATE_COMPLETED",
    );
    // Retention deletes alpha's finished tasks: its room comes back.
    store.flush();
    expect(await store.deleteFinished(new Date(Date.now() + 60_000).toISOString(), 2)).toHaveLength(2);
    expect(taskOf(await handler.sendMessage({ message: message("again") }, as("alpha"))).status.state).toBe(
      "TASK_STATE_COMPLETED",
    );
  });
});

describe("max_caller_bytes", () => {
  it("refuses a new task or a message that would take the caller past its bytes, counting what its tasks hold (the echo doubles it)", async () => {
    const handler = handlerWith({ maxCallerBytes: 50_000 });
    // Each echo task holds its message and the same text as its artifact: about 2 x 10,000 bytes.
    await handler.sendMessage({ message: message("a".repeat(10_000)) }, as("alpha"));
    await handler.sendMessage({ message: message("b".repeat(10_000)) }, as("alpha"));
    store.flush();
    const held = (await store.usage("alpha")).bytes;
    expect(held).toBeGreaterThan(40_000);
    expect(held).toBeLessThan(45_000);
    const err = await refusal(handler.sendMessage({ message: message("c".repeat(10_000)) }, as("alpha")));
    expect(err.metadata?.limit).toBe("max_caller_bytes");
    expect(err.message).toBe(
      `alpha's stored tasks take ${held} bytes on this node; 10000 more would pass its quota of 50000 bytes (max_caller_bytes); new tasks and messages are refused until retention deletes finished tasks (retention_days), or this node's operator raises the quota`,
    );
    // A smaller one still fits.
    await handler.sendMessage({ message: message("d".repeat(1000)) }, as("alpha"));
    expect((await store.usage("beta")).bytes).toBe(0);
    await handler.sendMessage({ message: message("e".repeat(10_000)) }, as("beta"));
  });

  it("counts a follow-up message to a task the same way, before anything is recorded", async () => {
    const quota = new StorageQuota(store, { maxCallerBytes: 30_000, maxCallerTasks: 0, ttlMs: 0 });
    // An executor that asks: the follow-up is an answer.
    const asking = {
      kind: "asking",
      async execute(req: { input(r: { text: string }): Promise<Message> }) {
        await req.input({ text: "more?" });
        return { state: "TASK_STATE_COMPLETED" as const, message: "ok" };
      },
    };
    const runnerOptions = { maxConcurrent: 4, maxQueued: 100, historyMessages: 5 };
    const { handler } = taskFixture({
      store,
      executor: asking as never,
      runnerOptions,
      handlerOptions: { storage: quota },
    });
    const asked = taskOf(await handler.sendMessage({ message: message("q".repeat(20_000)) }, as("alpha")));
    expect(asked.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
    store.flush();
    const err = await refusal(
      handler.sendMessage({ message: message("r".repeat(15_000), { taskId: asked.id }) }, as("alpha")),
    );
    expect(err.metadata?.limit).toBe("max_caller_bytes");
    expect((await store.get(asked.id, "alpha"))?.history).toHaveLength(2);
    const done = taskOf(await handler.sendMessage({ message: message("yes", { taskId: asked.id }) }, as("alpha")));
    expect(done.status.state).toBe("TASK_STATE_COMPLETED");
  });
});

describe("min_free_disk", () => {
  it("below the floor refuses the caller holding the most, below half of it every caller, and says so in the health check and the log", async () => {
    let free = 10_000_000;
    const lines: string[] = [];
    const log = createLogger((line) => lines.push(line), "info", "json");
    const floor = new DiskFloor(store, {
      path: join(dir, "db.sqlite"),
      floorBytes: 1_000_000,
      freeBytes: () => free,
      log,
    });
    await floor.start();
    floor.stop(); // read by hand below, not on a timer
    const refused: string[] = [];
    const handler = handlerWith({ floor }, refused);
    await handler.sendMessage({ message: message("x".repeat(50_000)) }, as("alpha"));
    await handler.sendMessage({ message: message("y".repeat(1000)) }, as("beta"));
    store.flush();
    expect(storageCheck(floor.state())).toMatchObject({
      ok: true,
      refusing: "none",
      freeBytes: 10_000_000,
      minFreeDisk: 1_000_000,
    });

    free = 900_000;
    await floor.check();
    const err = await refusal(handler.sendMessage({ message: message("more") }, as("alpha")));
    expect(err.metadata?.limit).toBe("min_free_disk");
    expect(err.message).toContain(
      "this node's disk has 900000 bytes free, less than its floor of 1000000 (min_free_disk)",
    );
    expect(err.message).toContain("from the caller whose stored tasks take the most (alpha,");
    expect(taskOf(await handler.sendMessage({ message: message("beta goes on") }, as("beta"))).status.state).toBe(
      "TASK_STATE_COMPLETED",
    );
    const check = storageCheck(floor.state());
    expect(check).toMatchObject({ ok: false, refusing: "heaviest", heaviest: "alpha" });
    expect(check.detail).toContain("new tasks and messages of alpha (the caller whose tasks take the most");

    free = 400_000;
    await floor.check();
    for (const who of ["alpha", "beta"])
      expect((await refusal(handler.sendMessage({ message: message("no") }, as(who)))).message).toContain(
        "from any caller",
      );
    expect(storageCheck(floor.state())).toMatchObject({ ok: false, refusing: "all" });

    free = 2_000_000;
    await floor.check();
    expect(taskOf(await handler.sendMessage({ message: message("room again") }, as("alpha"))).status.state).toBe(
      "TASK_STATE_COMPLETED",
    );
    expect(refused).toEqual(["min_free_disk", "min_free_disk", "min_free_disk"]);
    const said = lines.map((l) => JSON.parse(l) as { level: string; msg: string; peer?: string });
    expect(said.map((l) => [l.level, l.msg.split(":")[0], l.peer])).toEqual([
      ["warn", "free disk space is below min_free_disk", "alpha"],
      ["error", "free disk space is below half of min_free_disk", undefined],
      ["info", "free disk space is above min_free_disk again", undefined],
    ]);
  });

  it("with the floor off (or on Postgres) the check passes and says nothing is watched", () => {
    expect(storageCheck(undefined, "min_free_disk is 0")).toEqual({
      ok: true,
      detail: "free disk space is not watched (min_free_disk is 0); the per-caller quotas still apply",
    });
  });
});
