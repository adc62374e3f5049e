import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase, type OpenDatabase } from "../../src/store/database";
import { SqliteTaskStore } from "../../src/store/sqlite-task-store";
import type { Message } from "../../src/protocol/types";
import { A2AError } from "../../src/protocol/errors";

let dir: string;
let database: OpenDatabase;
let store: SqliteTaskStore;

const msg = (id: string, text: string, extra: Partial<Message> = {}): Message => ({ messageId: id, role: "ROLE_USER", parts: [{ text }], ...extra });

function create(id: string, owner = "alpha", contextId = `ctx-${id}`, ts = new Date().toISOString(), messageId = `m-${id}`) {
  return store.create({ id, contextId, owner, message: msg(messageId, `text ${id}`), executor: "echo", timestamp: ts });
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "a2a-store-"));
  database = openDatabase(join(dir, "a2a-node.db"));
  store = new SqliteTaskStore(database.db);
});
afterEach(() => {
  database.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("SqliteTaskStore", () => {
  it("creates the database file private to the user, in WAL mode", () => {
    expect(statSync(join(dir, "a2a-node.db")).mode & 0o777).toBe(0o600);
    expect(database.sqlite.query("PRAGMA journal_mode").get()).toEqual({ journal_mode: "wal" });
  });

  it("commits a SUBMITTED task with its first message, readable by its owner only", () => {
    const { task, created } = create("t1");
    expect(created).toBe(true);
    expect(task.status.state).toBe("TASK_STATE_SUBMITTED");
    const read = store.get("t1", "alpha");
    expect(read).toMatchObject({ id: "t1", contextId: "ctx-t1", status: { state: "TASK_STATE_SUBMITTED" } });
    expect(read?.history?.map((m) => m.messageId)).toEqual(["m-t1"]);
    expect(store.get("t1", "mallory")).toBeUndefined();
    expect(store.get("nope", "alpha")).toBeUndefined();
  });

  it("returns the existing task for a repeated messageId from the same owner, a new one for another owner", () => {
    create("t1", "alpha", "c", undefined, "same");
    const again = store.create({ id: "t2", contextId: "c", owner: "alpha", message: msg("same", "x"), executor: "echo", timestamp: new Date().toISOString() });
    expect(again.created).toBe(false);
    expect(again.task.id).toBe("t1");
    const other = store.create({ id: "t3", contextId: "c", owner: "beta", message: msg("same", "x"), executor: "echo", timestamp: new Date().toISOString() });
    expect(other.created).toBe(true);
  });

  it("records the outcome once: state, artifacts, the agent's message and merged metadata", () => {
    store.create({ id: "t1", contextId: "c", owner: "alpha", message: msg("m1", "hi"), executor: "echo", timestamp: "2026-01-01T00:00:00.000Z", metadata: { a: 1 } });
    store.setStatus("t1", { state: "TASK_STATE_WORKING", timestamp: "2026-01-01T00:00:01.000Z" });
    expect(store.get("t1", "alpha")?.status.state).toBe("TASK_STATE_WORKING");
    const reply: Message = { messageId: "r1", role: "ROLE_AGENT", parts: [{ text: "done" }] };
    store.finish("t1", { state: "TASK_STATE_COMPLETED", timestamp: "2026-01-01T00:00:02.000Z", message: reply }, [{ artifactId: "a1", parts: [{ text: "result" }] }], { usage: { total_tokens: 3 } });
    const t = store.get("t1", "alpha");
    expect(t?.status).toEqual({ state: "TASK_STATE_COMPLETED", timestamp: "2026-01-01T00:00:02.000Z", message: reply });
    expect(t?.artifacts).toEqual([{ artifactId: "a1", parts: [{ text: "result" }] }]);
    expect(t?.history?.map((m) => m.messageId)).toEqual(["m1", "r1"]);
    expect(t?.metadata).toEqual({ a: 1, usage: { total_tokens: 3 } });
  });

  it("applies historyLength: unset = all, 0 = none, N = the last N", () => {
    create("t1");
    store.appendMessage("t1", msg("m2", "second"), new Date().toISOString());
    store.appendMessage("t1", msg("m3", "third"), new Date().toISOString());
    expect(store.get("t1", "alpha")?.history?.map((m) => m.messageId)).toEqual(["m-t1", "m2", "m3"]);
    expect(store.get("t1", "alpha", 0)?.history).toBeUndefined();
    expect(store.get("t1", "alpha", 2)?.history?.map((m) => m.messageId)).toEqual(["m2", "m3"]);
  });

  it("lists the caller's tasks newest first, with filters, pages and a total", () => {
    for (let i = 0; i < 7; i++) create(`t${i}`, "alpha", i % 2 ? "odd" : "even", `2026-01-01T00:00:0${i}.000Z`);
    create("x1", "beta", "even", "2026-01-01T00:00:09.000Z");
    store.finish("t3", { state: "TASK_STATE_COMPLETED", timestamp: "2026-01-01T00:00:08.000Z" }, [{ artifactId: "a", parts: [{ text: "r" }] }]);

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

  it("refuses a page token it did not issue", () => {
    expect(() => store.list("alpha", { pageToken: "garbage" })).toThrow(A2AError);
  });

  it("finds tasks a previous run left unfinished", () => {
    create("t1");
    create("t2");
    store.setStatus("t2", { state: "TASK_STATE_WORKING" });
    create("t3");
    store.finish("t3", { state: "TASK_STATE_COMPLETED" }, []);
    expect(store.unfinished().map((t) => [t.id, t.state])).toEqual([
      ["t1", "TASK_STATE_SUBMITTED"],
      ["t2", "TASK_STATE_WORKING"],
    ]);
  });

  it("gives a context's history across its tasks, bounded, oldest first, owner-scoped", () => {
    create("t1", "alpha", "ctx", undefined, "a");
    store.finish("t1", { state: "TASK_STATE_COMPLETED", message: { messageId: "b", role: "ROLE_AGENT", parts: [{ text: "reply" }] } }, []);
    create("t2", "alpha", "ctx", undefined, "c");
    create("t3", "beta", "ctx", undefined, "d");
    expect(store.contextHistory("ctx", "alpha", 10).map((m) => m.messageId)).toEqual(["a", "b", "c"]);
    expect(store.contextHistory("ctx", "alpha", 2).map((m) => m.messageId)).toEqual(["b", "c"]);
    expect(store.contextHistory("ctx", "beta", 10).map((m) => m.messageId)).toEqual(["d"]);
  });

  it("keeps everything across a reopen of the file", () => {
    create("t1");
    store.finish("t1", { state: "TASK_STATE_FAILED" }, []);
    database.close();
    database = openDatabase(join(dir, "a2a-node.db"));
    store = new SqliteTaskStore(database.db);
    expect(store.get("t1", "alpha")?.status.state).toBe("TASK_STATE_FAILED");
  });
});
