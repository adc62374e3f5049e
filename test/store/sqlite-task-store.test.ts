import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { statSync } from "node:fs";
import { join } from "node:path";
import { openDatabase, type OpenDatabase } from "../../src/store/database";
import { SqliteTaskStore } from "../../src/store/sqlite-task-store";
import type { Message } from "../../src/protocol/types";
import { finishTask } from "../helpers/store-writes";
import { tempDir } from "../helpers/temp-dir";

let dir: string;
let database: OpenDatabase;
let store: SqliteTaskStore;

const msg = (id: string, text: string, extra: Partial<Message> = {}): Message => ({
  messageId: id,
  role: "ROLE_USER",
  parts: [{ text }],
  ...extra,
});

async function create(
  id: string,
  owner = "alpha",
  contextId = `ctx-${id}`,
  ts = new Date().toISOString(),
  messageId = `m-${id}`,
) {
  const r = await store.create({
    id,
    contextId,
    owner,
    message: msg(messageId, `text ${id}`),
    executor: "echo",
    timestamp: ts,
  });
  await r.committed;
  return r;
}

beforeEach(() => {
  dir = tempDir("a2a-store-");
  database = openDatabase(join(dir, "a2a-node.db"));
  store = new SqliteTaskStore(database);
});
afterEach(() => {
  database.close();
});

describe("SqliteTaskStore", () => {
  it("creates the database file private to the user, in WAL mode", async () => {
    expect(statSync(join(dir, "a2a-node.db")).mode & 0o777).toBe(0o600);
    expect(database.sqlite.query("PRAGMA journal_mode").get()).toEqual({ journal_mode: "wal" });
  });

  describe("events a task's row implies", () => {
    const ts = (ms: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, 0, ms)).toISOString();
    const eventRows = (taskId: string) =>
      (database.sqlite.query("SELECT count(*) AS n FROM task_events WHERE task_id = ?1").get(taskId) as { n: number })
        .n;

    /** What the runner does for a task that is created, run and finished before the next commit. */
    function runInOneCommit(
      id: string,
      extra: { progress?: boolean; state?: "TASK_STATE_COMPLETED" | "TASK_STATE_INPUT_REQUIRED"; reply?: boolean } = {},
    ) {
      const contextId = `ctx-${id}`;
      // Not awaited: SQLite's create queues the insert at once, and everything below must join its commit.
      const r = store.create({
        id,
        contextId,
        owner: "alpha",
        message: msg(`m-${id}`, "hi"),
        executor: "echo",
        timestamp: ts(0),
      });
      const working = { state: "TASK_STATE_WORKING" as const, timestamp: ts(1) };
      void store.record(id, { status: working });
      const events: never[] = [{ statusUpdate: { taskId: id, contextId, status: working } } as never];
      if (extra.progress)
        events.push({
          statusUpdate: { taskId: id, contextId, status: { ...working, message: msg("p", "thinking") } },
        } as never);
      const artifact = { artifactId: `${id}-a`, name: "answer", parts: [{ text: "hello" }, { data: { n: 1 } }] };
      events.push({ artifactUpdate: { taskId: id, contextId, artifact, lastChunk: true } } as never);
      const status = {
        state: extra.state ?? ("TASK_STATE_COMPLETED" as const),
        timestamp: ts(2),
        ...(extra.reply ? { message: { ...msg("r", "done"), role: "ROLE_AGENT" as const } } : {}),
      };
      events.push({ statusUpdate: { taskId: id, contextId, status } } as never);
      void finishTask(store, id, status, [{ ...artifact, parts: [...artifact.parts] }]);
      const done = store.record(id, { events: { firstSeq: 1, items: events }, rowSeq: events.length });
      return { events, done: Promise.all([r.then((c) => c.committed), done]) };
    }

    it("stores no event rows for a task that ran its whole life in one commit, and replays the same events", async () => {
      const { events, done } = runInOneCommit("i1", { reply: true });
      await done;
      expect(eventRows("i1")).toBe(0);
      expect(await store.lastEventSeq("i1")).toBe(3);
      expect(JSON.stringify((await store.eventsAfter("i1", 0)).map((e) => e.response))).toBe(JSON.stringify(events));
      expect((await store.eventsAfter("i1", 0)).map((e) => e.seq)).toEqual([1, 2, 3]);
      expect((await store.eventsAfter("i1", 2)).map((e) => e.seq)).toEqual([3]);
      expect(await store.eventsAfter("i1", 3)).toEqual([]);
      expect((await store.snapshot("i1", "alpha"))?.lastSeq).toBe(3);
    });

    it("stores the events themselves when they say more than the row (progress) or the task is not over", async () => {
      const a = runInOneCommit("i2", { progress: true });
      const b = runInOneCommit("i3", { state: "TASK_STATE_INPUT_REQUIRED" });
      await Promise.all([a.done, b.done]);
      expect(eventRows("i2")).toBe(1);
      expect(eventRows("i3")).toBe(1);
      expect(JSON.stringify((await store.eventsAfter("i2", 0)).map((e) => e.response))).toBe(JSON.stringify(a.events));
      expect(await store.lastEventSeq("i2")).toBe(4);
      expect(JSON.stringify((await store.eventsAfter("i3", 0)).map((e) => e.response))).toBe(JSON.stringify(b.events));
    });

    it("stores the events themselves for a task whose start was committed before it finished", async () => {
      await create("i4");
      const working = { state: "TASK_STATE_WORKING" as const, timestamp: ts(1) };
      void store.record("i4", { status: working });
      await store.record("i4", {
        events: { firstSeq: 1, items: [{ statusUpdate: { taskId: "i4", contextId: "ctx-i4", status: working } }] },
        rowSeq: 1,
      });
      const status = { state: "TASK_STATE_COMPLETED" as const, timestamp: ts(2) };
      void finishTask(store, "i4", status, []);
      await store.record("i4", {
        events: { firstSeq: 2, items: [{ statusUpdate: { taskId: "i4", contextId: "ctx-i4", status } }] },
        rowSeq: 2,
      });
      expect(eventRows("i4")).toBe(2);
      expect((await store.eventsAfter("i4", 0)).map((e) => e.seq)).toEqual([1, 2]);
      expect(await store.lastEventSeq("i4")).toBe(2);
    });
  });

  it("keeps everything across a reopen of the file", async () => {
    await create("t1");
    await finishTask(store, "t1", { state: "TASK_STATE_FAILED" }, []);
    store.flush();
    database.close();
    database = openDatabase(join(dir, "a2a-node.db"));
    store = new SqliteTaskStore(database);
    expect((await store.get("t1", "alpha"))?.status.state).toBe("TASK_STATE_FAILED");
  });
});
