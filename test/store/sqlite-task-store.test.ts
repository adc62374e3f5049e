import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase, type OpenDatabase } from "../../src/store/database";
import { SqliteTaskStore } from "../../src/store/sqlite-task-store";
import type { Message } from "../../src/protocol/types";
import { TaskStoreRequestError } from "../../src/tasks/task-store";

let dir: string;
let database: OpenDatabase;
let store: SqliteTaskStore;

const msg = (id: string, text: string, extra: Partial<Message> = {}): Message => ({ messageId: id, role: "ROLE_USER", parts: [{ text }], ...extra });

async function create(id: string, owner = "alpha", contextId = `ctx-${id}`, ts = new Date().toISOString(), messageId = `m-${id}`) {
  const r = store.create({ id, contextId, owner, message: msg(messageId, `text ${id}`), executor: "echo", timestamp: ts });
  await r.committed;
  return r;
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "a2a-store-"));
  database = openDatabase(join(dir, "a2a-node.db"));
  store = new SqliteTaskStore(database);
});
afterEach(() => {
  database.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("SqliteTaskStore", () => {
  it("creates the database file private to the user, in WAL mode", async () => {
    expect(statSync(join(dir, "a2a-node.db")).mode & 0o777).toBe(0o600);
    expect(database.sqlite.query("PRAGMA journal_mode").get()).toEqual({ journal_mode: "wal" });
  });

  it("commits a SUBMITTED task with its first message, readable by its owner only", async () => {
    const { task, created } = await create("t1");
    expect(created).toBe(true);
    expect(task.status.state).toBe("TASK_STATE_SUBMITTED");
    const read = store.get("t1", "alpha");
    expect(read).toMatchObject({ id: "t1", contextId: "ctx-t1", status: { state: "TASK_STATE_SUBMITTED" } });
    expect(read?.history?.map((m) => m.messageId)).toEqual(["m-t1"]);
    expect(store.get("t1", "mallory")).toBeUndefined();
    expect(store.get("nope", "alpha")).toBeUndefined();
  });

  it("returns the existing task for a repeated messageId from the same owner, a new one for another owner", async () => {
    await create("t1", "alpha", "c", undefined, "same");
    const again = store.create({ id: "t2", contextId: "c", owner: "alpha", message: msg("same", "x"), executor: "echo", timestamp: new Date().toISOString() });
    expect(again.created).toBe(false);
    expect(again.task.id).toBe("t1");
    await again.committed;
    const other = store.create({ id: "t3", contextId: "c", owner: "beta", message: msg("same", "x"), executor: "echo", timestamp: new Date().toISOString() });
    expect(other.created).toBe(true);
  });

  it("records the outcome once: state, artifacts, the agent's message and merged metadata", async () => {
    await store.create({ id: "t1", contextId: "c", owner: "alpha", message: msg("m1", "hi"), executor: "echo", timestamp: "2026-01-01T00:00:00.000Z", metadata: { a: 1 } }).committed;
    await store.setStatus("t1", { state: "TASK_STATE_WORKING", timestamp: "2026-01-01T00:00:01.000Z" });
    expect(store.get("t1", "alpha")?.status.state).toBe("TASK_STATE_WORKING");
    const reply: Message = { messageId: "r1", role: "ROLE_AGENT", parts: [{ text: "done" }] };
    await store.finish("t1", { state: "TASK_STATE_COMPLETED", timestamp: "2026-01-01T00:00:02.000Z", message: reply }, [{ artifactId: "a1", parts: [{ text: "result" }] }], { usage: { total_tokens: 3 } });
    const t = store.get("t1", "alpha");
    expect(t?.status).toEqual({ state: "TASK_STATE_COMPLETED", timestamp: "2026-01-01T00:00:02.000Z", message: reply });
    expect(t?.artifacts).toEqual([{ artifactId: "a1", parts: [{ text: "result" }] }]);
    expect(t?.history?.map((m) => m.messageId)).toEqual(["m1", "r1"]);
    expect(t?.metadata).toEqual({ a: 1, usage: { total_tokens: 3 } });
  });

  it("applies historyLength: unset = all, 0 = none, N = the last N", async () => {
    await create("t1");
    await store.appendMessage("t1", msg("m2", "second"));
    await store.appendMessage("t1", msg("m3", "third"));
    expect(store.get("t1", "alpha")?.history?.map((m) => m.messageId)).toEqual(["m-t1", "m2", "m3"]);
    expect(store.get("t1", "alpha", 0)?.history).toBeUndefined();
    expect(store.get("t1", "alpha", 2)?.history?.map((m) => m.messageId)).toEqual(["m2", "m3"]);
  });

  it("lists the caller's tasks newest first, with filters, pages and a total", async () => {
    for (let i = 0; i < 7; i++) await create(`t${i}`, "alpha", i % 2 ? "odd" : "even", `2026-01-01T00:00:0${i}.000Z`);
    await create("x1", "beta", "even", "2026-01-01T00:00:09.000Z");
    await store.finish("t3", { state: "TASK_STATE_COMPLETED", timestamp: "2026-01-01T00:00:08.000Z" }, [{ artifactId: "a", parts: [{ text: "r" }] }]);

    const all = store.list("alpha", {});
    expect(all.totalSize).toBe(7);
    expect(all.tasks.map((t) => t.id)).toEqual(["t3", "t6", "t5", "t4", "t2", "t1", "t0"]);
    expect(all.nextPageToken).toBe("");
    expect(all.tasks[0].artifacts).toBeUndefined(); // includeArtifacts defaults to false

    const p1 = store.list("alpha", { pageSize: 3 });
    expect(p1.tasks.map((t) => t.id)).toEqual(["t3", "t6", "t5"]);
    expect(p1.pageSize).toBe(3);
    const p2 = store.list("alpha", { pageSize: 3, pageToken: p1.nextPageToken });
    expect(p2.tasks.map((t) => t.id)).toEqual(["t4", "t2", "t1"]);
    const p3 = store.list("alpha", { pageSize: 3, pageToken: p2.nextPageToken });
    expect(p3.tasks.map((t) => t.id)).toEqual(["t0"]);
    expect(p3.nextPageToken).toBe("");

    expect(store.list("alpha", { contextId: "odd" }).tasks.map((t) => t.id)).toEqual(["t3", "t5", "t1"]);
    expect(store.list("alpha", { status: "TASK_STATE_COMPLETED", includeArtifacts: true }).tasks).toMatchObject([{ id: "t3", artifacts: [{ artifactId: "a" }] }]);
    expect(store.list("alpha", { statusTimestampAfter: "2026-01-01T00:00:05.000Z" }).tasks.map((t) => t.id)).toEqual(["t3", "t6"]);
    expect(store.list("alpha", { historyLength: 0 }).tasks[0].history).toBeUndefined();
    expect(store.list("beta", {}).tasks.map((t) => t.id)).toEqual(["x1"]);
  });

  it("refuses a page token it did not issue", async () => {
    expect(() => store.list("alpha", { pageToken: "garbage" })).toThrow(TaskStoreRequestError);
  });

  it("finds tasks a previous run left unfinished", async () => {
    await create("t1");
    await create("t2");
    await store.setStatus("t2", { state: "TASK_STATE_WORKING" });
    await create("t3");
    await store.finish("t3", { state: "TASK_STATE_COMPLETED" }, []);
    expect(store.unfinished().map((t) => [t.id, t.state])).toEqual([
      ["t1", "TASK_STATE_SUBMITTED"],
      ["t2", "TASK_STATE_WORKING"],
    ]);
  });

  it("finds a context named after its first task (the node's own contexts) by id and its later tasks by index", async () => {
    await create("c1", "alpha", "c1", undefined, "a"); // starts context c1: the node named it after the task
    await create("c2", "alpha", "c1", undefined, "b"); // continues it
    await create("c3", "alpha", "c1", undefined, "c");
    await create("c4", "beta", "c1", undefined, "d"); // another peer's context of the same name
    await create("x1", "alpha", "other", undefined, "e");
    await create("c1x", "alpha", "c3", undefined, "f"); // a task continuing a context named like task c3
    expect(store.contextHistory("c1", "alpha", 10).map((m) => m.messageId)).toEqual(["a", "b", "c"]);
    expect(store.countInContext("c1", "alpha")).toBe(3);
    expect(store.countInContext("c1", "beta")).toBe(1);
    expect(store.list("alpha", { contextId: "c1" }).tasks.map((t) => t.id).sort()).toEqual(["c1", "c2", "c3"]);
    expect(store.list("alpha", { contextId: "c1" }).totalSize).toBe(3);
    // Task c3 belongs to context c1: it is not the first task of a context "c3".
    expect(store.contextHistory("c3", "alpha", 10).map((m) => m.messageId)).toEqual(["f"]);
    expect(store.countInContext("c3", "alpha")).toBe(1);
    expect(store.list("alpha", { contextId: "c3" }).tasks.map((t) => t.id)).toEqual(["c1x"]);
    expect(store.list("alpha", { contextId: "none" })).toMatchObject({ tasks: [], totalSize: 0 });
  });

  it("gives a context's history across its tasks, bounded, oldest first, owner-scoped", async () => {
    await create("t1", "alpha", "ctx", undefined, "a");
    await store.finish("t1", { state: "TASK_STATE_COMPLETED", message: { messageId: "b", role: "ROLE_AGENT", parts: [{ text: "reply" }] } }, []);
    await create("t2", "alpha", "ctx", undefined, "c");
    await create("t3", "beta", "ctx", undefined, "d");
    expect(store.contextHistory("ctx", "alpha", 10).map((m) => m.messageId)).toEqual(["a", "b", "c"]);
    expect(store.contextHistory("ctx", "alpha", 2).map((m) => m.messageId)).toEqual(["b", "c"]);
    expect(store.contextHistory("ctx", "beta", 10).map((m) => m.messageId)).toEqual(["d"]);
  });

  it("sees a create that is not yet committed when the same message comes again (idempotency)", async () => {
    const first = store.create({ id: "p1", contextId: "c", owner: "alpha", message: msg("dup", "x"), executor: "echo", timestamp: new Date().toISOString() });
    const second = store.create({ id: "p2", contextId: "c", owner: "alpha", message: msg("dup", "x"), executor: "echo", timestamp: new Date().toISOString() });
    expect(first.created).toBe(true);
    expect(second).toMatchObject({ created: false, task: { id: "p1" } });
    expect(store.get("p1", "alpha")).toBeUndefined(); // nothing is visible before the commit...
    await second.committed;
    expect(store.get("p1", "alpha")?.id).toBe("p1"); // ...and the duplicate's promise waits for it
    expect(store.get("p2", "alpha")).toBeUndefined();
  });

  it("merges a create, a status change and the outcome made in one turn into one committed task", async () => {
    const r = store.create({ id: "m1", contextId: "c", owner: "alpha", message: msg("q", "x"), executor: "echo", timestamp: "2026-01-01T00:00:00.000Z" });
    void store.setStatus("m1", { state: "TASK_STATE_WORKING", timestamp: "2026-01-01T00:00:00.001Z" });
    const done = store.finish("m1", { state: "TASK_STATE_COMPLETED", timestamp: "2026-01-01T00:00:00.002Z" }, [{ artifactId: "a", parts: [{ text: "y" }] }]);
    await Promise.all([r.committed, done]);
    expect(store.get("m1", "alpha")).toMatchObject({ status: { state: "TASK_STATE_COMPLETED", timestamp: "2026-01-01T00:00:00.002Z" }, artifacts: [{ artifactId: "a" }] });
    expect(store.unfinished()).toEqual([]);
  });

  it("replaces an artifact re-sent with the same artifactId, keeping its place", async () => {
    await create("t1");
    await store.finish("t1", { state: "TASK_STATE_WORKING" }, [{ artifactId: "a", parts: [{ text: "v1" }] }, { artifactId: "b", parts: [{ text: "b" }] }]);
    await store.finish("t1", { state: "TASK_STATE_COMPLETED" }, [{ artifactId: "a", parts: [{ text: "v2" }] }]);
    expect(store.get("t1", "alpha")?.artifacts?.map((a) => a.parts[0].text)).toEqual(["v2", "b"]);
  });

  it("numbers events per task and replays those after a given number", async () => {
    await create("t1");
    expect(store.lastEventSeq("t1")).toBe(0);
    const ev = (state: string) => ({ statusUpdate: { taskId: "t1", contextId: "c", status: { state } } }) as never;
    await store.appendEvents("t1", 1, [ev("TASK_STATE_WORKING")], 1);
    await store.appendEvents("t1", 2, [ev("TASK_STATE_WORKING"), ev("TASK_STATE_COMPLETED")]);
    expect(store.lastEventSeq("t1")).toBe(3);
    expect(store.eventsAfter("t1", 1).map((e) => e.seq)).toEqual([2, 3]);
    expect(store.snapshot("t1", "alpha")?.lastSeq).toBe(1);
    expect(store.lastEventSeq("other")).toBe(0);
  });

  describe("events a task's row implies", () => {
    const ts = (ms: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, 0, ms)).toISOString();
    const eventRows = (taskId: string) =>
      (database.sqlite.query("SELECT count(*) AS n FROM task_events WHERE task_id = ?1").get(taskId) as { n: number }).n;

    /** What the runner does for a task that is created, run and finished before the next commit. */
    function runInOneCommit(id: string, extra: { progress?: boolean; state?: "TASK_STATE_COMPLETED" | "TASK_STATE_INPUT_REQUIRED"; reply?: boolean } = {}) {
      const contextId = `ctx-${id}`;
      const r = store.create({ id, contextId, owner: "alpha", message: msg(`m-${id}`, "hi"), executor: "echo", timestamp: ts(0) });
      const working = { state: "TASK_STATE_WORKING" as const, timestamp: ts(1) };
      void store.setStatus(id, working);
      const events: never[] = [{ statusUpdate: { taskId: id, contextId, status: working } } as never];
      if (extra.progress) events.push({ statusUpdate: { taskId: id, contextId, status: { ...working, message: msg("p", "thinking") } } } as never);
      const artifact = { artifactId: `${id}-a`, name: "answer", parts: [{ text: "hello" }, { data: { n: 1 } }] };
      events.push({ artifactUpdate: { taskId: id, contextId, artifact, lastChunk: true } } as never);
      const status = { state: extra.state ?? ("TASK_STATE_COMPLETED" as const), timestamp: ts(2), ...(extra.reply ? { message: { ...msg("r", "done"), role: "ROLE_AGENT" as const } } : {}) };
      events.push({ statusUpdate: { taskId: id, contextId, status } } as never);
      void store.finish(id, status, [{ ...artifact, parts: [...artifact.parts] }]);
      const done = store.appendEvents(id, 1, events, events.length);
      return { events, done: Promise.all([r.committed, done]) };
    }

    it("stores no event rows for a task that ran its whole life in one commit, and replays the same events", async () => {
      const { events, done } = runInOneCommit("i1", { reply: true });
      await done;
      expect(eventRows("i1")).toBe(0);
      expect(store.lastEventSeq("i1")).toBe(3);
      expect(JSON.stringify(store.eventsAfter("i1", 0).map((e) => e.response))).toBe(JSON.stringify(events));
      expect(store.eventsAfter("i1", 0).map((e) => e.seq)).toEqual([1, 2, 3]);
      expect(store.eventsAfter("i1", 2).map((e) => e.seq)).toEqual([3]);
      expect(store.eventsAfter("i1", 3)).toEqual([]);
      expect(store.snapshot("i1", "alpha")?.lastSeq).toBe(3);
    });

    it("stores the events themselves when they say more than the row (progress) or the task is not over", async () => {
      const a = runInOneCommit("i2", { progress: true });
      const b = runInOneCommit("i3", { state: "TASK_STATE_INPUT_REQUIRED" });
      await Promise.all([a.done, b.done]);
      expect(eventRows("i2")).toBe(1);
      expect(eventRows("i3")).toBe(1);
      expect(JSON.stringify(store.eventsAfter("i2", 0).map((e) => e.response))).toBe(JSON.stringify(a.events));
      expect(store.lastEventSeq("i2")).toBe(4);
      expect(JSON.stringify(store.eventsAfter("i3", 0).map((e) => e.response))).toBe(JSON.stringify(b.events));
    });

    it("stores the events themselves for a task whose start was committed before it finished", async () => {
      await create("i4");
      const working = { state: "TASK_STATE_WORKING" as const, timestamp: ts(1) };
      void store.setStatus("i4", working);
      await store.appendEvents("i4", 1, [{ statusUpdate: { taskId: "i4", contextId: "ctx-i4", status: working } }], 1);
      const status = { state: "TASK_STATE_COMPLETED" as const, timestamp: ts(2) };
      void store.finish("i4", status, []);
      await store.appendEvents("i4", 2, [{ statusUpdate: { taskId: "i4", contextId: "ctx-i4", status } }], 2);
      expect(eventRows("i4")).toBe(2);
      expect(store.eventsAfter("i4", 0).map((e) => e.seq)).toEqual([1, 2]);
      expect(store.lastEventSeq("i4")).toBe(2);
    });
  });

  it("keeps everything across a reopen of the file", async () => {
    await create("t1");
    await store.finish("t1", { state: "TASK_STATE_FAILED" }, []);
    store.flush();
    database.close();
    database = openDatabase(join(dir, "a2a-node.db"));
    store = new SqliteTaskStore(database);
    expect(store.get("t1", "alpha")?.status.state).toBe("TASK_STATE_FAILED");
  });
});
