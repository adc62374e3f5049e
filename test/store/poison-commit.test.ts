/**
 * One task's writes that cannot be stored never cost another task its writes: on a real SQLite file, a
 * failure is injected into a commit shared with good tasks (a trigger that RAISEs for one task, a constraint
 * that fails the COMMIT itself, a full disk, data that cannot be serialised), and every write whose promise
 * resolved is read back from the file by a second connection. Only the failing task's writers get an error,
 * and the log names the task and the reason, never what the task holds.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { createLogger } from "../../src/log";
import type { Artifact, Message } from "../../src/protocol/types";
import { openDatabase, type OpenDatabase } from "../../src/store/database";
import { SqliteTaskStore } from "../../src/store/sqlite-task-store";
import { UnstorableData, WriteRefused } from "../../src/tasks/task-store";
import { finishTask } from "../helpers/store-writes";
import { tempDir } from "../helpers/temp-dir";

let dir: string;
let path: string;
let database: OpenDatabase;
let store: SqliteTaskStore;
let log: string;

const SECRET = "confidential-words-that-must-not-be-logged";
const msg = (id: string, text = `${SECRET} ${id}`): Message => ({
  messageId: `m-${id}`,
  role: "ROLE_USER",
  parts: [{ text }],
});
const now = () => new Date().toISOString();

beforeEach(() => {
  dir = tempDir("a2a-poison-");
  path = join(dir, "a2a-node.db");
  database = openDatabase(path);
  log = "";
  store = new SqliteTaskStore(database, { log: createLogger((line) => (log += line)) });
});
afterEach(() => {
  database.close();
});

/** Starts creating tasks `ids` in this one turn (so they share a commit); their `committed` promises. */
function createAll(ids: string[], text?: (id: string) => string): Promise<void>[] {
  // Not awaited one by one: SQLite's create queues each insert at once, so all of them join one commit.
  return ids.map((id) =>
    store
      .create({
        id,
        contextId: `c-${id}`,
        owner: "alpha",
        message: msg(id, text?.(id)),
        executor: "echo",
        timestamp: now(),
      })
      .then((r) => r.committed),
  );
}

/** The task ids and states in the file, read by a second connection: what is on disk, not in memory. */
function onDisk(): Map<string, string> {
  const other = new Database(path, { readonly: true });
  try {
    const rows = other.query("SELECT id, state FROM tasks").all() as { id: string; state: string }[];
    return new Map(rows.map((r) => [r.id, r.state]));
  } finally {
    other.close();
  }
}

const ids = (prefix: string, n: number) =>
  Array.from({ length: n }, (_, i) => `${prefix}-${String(i).padStart(2, "0")}`);

/** Settles every promise; returns which ids resolved and which rejected (with the error). */
async function outcomes(names: string[], writes: Promise<void>[]) {
  const settled = await Promise.allSettled(writes);
  const ok: string[] = [];
  const failed = new Map<string, Error>();
  settled.forEach((s, i) => (s.status === "fulfilled" ? ok.push(names[i]) : failed.set(names[i], s.reason as Error)));
  return { ok, failed };
}

function expectLogged(task: string, reason: RegExp) {
  const line = log.split("\n").find((l) => l.includes(`task_id=${task}`));
  expect(line, log).toBeDefined();
  expect(line).toMatch(/ error could not store a task's writes/);
  expect(line).toMatch(reason);
  expect(log).not.toContain(SECRET);
}

describe("a failure inside a commit shared with good tasks", () => {
  it.each(["ABORT", "FAIL", "ROLLBACK"])(
    "a trigger RAISE(%s) on one task's insert: the other 29 are stored, only the poisoned caller gets the error",
    async (kind) => {
      database.sqlite.exec(
        `CREATE TRIGGER poison BEFORE INSERT ON tasks WHEN NEW.id = 'good-13' BEGIN SELECT RAISE(${kind}, 'injected failure'); END`,
      );
      const names = ids("good", 30);
      const { ok, failed } = await outcomes(names, createAll(names));
      expect([...failed.keys()]).toEqual(["good-13"]);
      expect(failed.get("good-13")?.message).toMatch(/injected failure/);
      const disk = onDisk();
      expect(ok).toHaveLength(29);
      for (const id of ok) expect(disk.get(id)).toBe("TASK_STATE_SUBMITTED");
      expect(disk.has("good-13")).toBe(false);
      expect(log).toMatch(
        / warn a group commit failed; committing its tasks one at a time tasks=30 reason="injected failure"/,
      );
      expectLogged("good-13", /reason="injected failure"/);
    },
  );

  it("a failure of the COMMIT itself (a deferred constraint one task breaks): the others are stored", async () => {
    // Checked only at COMMIT, like a disk failing as the transaction is written out.
    database.sqlite.exec(`
      CREATE TABLE parent (id TEXT PRIMARY KEY);
      CREATE TABLE child (parent_id TEXT REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED);
      CREATE TRIGGER breaks_commit AFTER INSERT ON tasks WHEN NEW.id = 'good-04' BEGIN INSERT INTO child VALUES ('missing'); END;
    `);
    const names = ids("good", 12);
    const { ok, failed } = await outcomes(names, createAll(names));
    expect([...failed.keys()]).toEqual(["good-04"]);
    expect(failed.get("good-04")?.message).toMatch(/FOREIGN KEY constraint failed/);
    const disk = onDisk();
    for (const id of ok) expect(disk.get(id)).toBe("TASK_STATE_SUBMITTED");
    expect(disk.size).toBe(11);
    expectLogged("good-04", /FOREIGN KEY/);
  });

  it("a later write of a stored task that fails leaves that task as it was and every other task's write stored", async () => {
    const names = ids("t", 10);
    await Promise.all(createAll(names));
    database.sqlite.exec(
      `CREATE TRIGGER poison BEFORE UPDATE ON tasks WHEN NEW.id = 't-07' AND NEW.state = 'TASK_STATE_COMPLETED' BEGIN SELECT RAISE(ABORT, 'injected failure'); END`,
    );
    const finished = names.map((id) =>
      finishTask(store, id, { state: "TASK_STATE_COMPLETED", timestamp: now() }, [
        { artifactId: `a-${id}`, parts: [{ text: "done" }] },
      ]),
    );
    const { failed } = await outcomes(names, finished);
    expect([...failed.keys()]).toEqual(["t-07"]);
    const disk = onDisk();
    for (const id of names) expect(disk.get(id)).toBe(id === "t-07" ? "TASK_STATE_SUBMITTED" : "TASK_STATE_COMPLETED");
    // The failed task takes writes again once it can be stored.
    database.sqlite.exec("DROP TRIGGER poison");
    await finishTask(store, "t-07", { state: "TASK_STATE_COMPLETED", timestamp: now() }, []);
    expect(onDisk().get("t-07")).toBe("TASK_STATE_COMPLETED");
  });

  it("a write that failed is not remembered: the task's next write builds on what is on disk, not on the rolled-back change", async () => {
    // The store keeps the row it last committed for a running task (no read-back before its next change);
    // a change rolled back must not leak into that copy. The failure comes after the row's update ran (at the
    // task's events), so the update's row was made and must be forgotten with the rollback.
    await Promise.all(createAll(["r-1", "r-2"]));
    await store.record("r-1", { status: { state: "TASK_STATE_WORKING", timestamp: now() } });
    database.sqlite.exec(
      `CREATE TRIGGER poison BEFORE INSERT ON task_events WHEN NEW.task_id = 'r-1' AND NEW.events LIKE '%lost%' BEGIN SELECT RAISE(ABORT, 'injected failure'); END`,
    );
    const lost: Artifact = { artifactId: "lost", parts: [{ text: "rolled back" }] };
    const [failedWrite, other] = await Promise.allSettled([
      store.record("r-1", {
        status: { state: "TASK_STATE_WORKING", timestamp: now() },
        artifacts: [lost],
        history: [msg("r-1-more")],
        events: { firstSeq: 1, items: [{ artifactUpdate: { taskId: "r-1", contextId: "c-r-1", artifact: lost } }] },
      }),
      store.record("r-2", { status: { state: "TASK_STATE_WORKING", timestamp: now() } }),
    ]);
    expect(failedWrite.status).toBe("rejected");
    expect(other.status).toBe("fulfilled");
    database.sqlite.exec("DROP TRIGGER poison");
    await finishTask(store, "r-1", { state: "TASK_STATE_COMPLETED", timestamp: now() }, [
      { artifactId: "kept", parts: [{ text: "done" }] },
    ]);
    const task = await store.get("r-1", "alpha");
    expect(task?.status.state).toBe("TASK_STATE_COMPLETED");
    expect(task?.artifacts?.map((a) => a.artifactId)).toEqual(["kept"]);
    expect(task?.history?.map((m) => m.messageId)).toEqual(["m-r-1"]);
    expect(onDisk().get("r-2")).toBe("TASK_STATE_WORKING");
  });

  it("a task's successive writes, each planned on the row the last one committed, add up on disk", async () => {
    await Promise.all(createAll(["s-1"]));
    await store.record("s-1", { status: { state: "TASK_STATE_WORKING", timestamp: now() } });
    for (let i = 0; i < 5; i++)
      await store.record("s-1", {
        artifacts: [{ artifactId: `a-${i}`, parts: [{ text: `part ${i}` }] }],
        history: [msg(`s-1-${i}`)],
      });
    await finishTask(store, "s-1", { state: "TASK_STATE_COMPLETED", timestamp: now() }, []);
    // Read by a second connection: what is on disk.
    const other = new Database(path, { readonly: true });
    try {
      const row = other.query("SELECT state, history, artifacts FROM tasks WHERE id = 's-1'").get() as {
        state: string;
        history: string;
        artifacts: string;
      };
      expect(row.state).toBe("TASK_STATE_COMPLETED");
      expect((JSON.parse(row.artifacts) as Artifact[]).map((a) => a.artifactId)).toEqual([
        "a-0",
        "a-1",
        "a-2",
        "a-3",
        "a-4",
      ]);
      expect((JSON.parse(row.history) as Message[]).map((m) => m.messageId)).toEqual([
        "m-s-1",
        "m-s-1-0",
        "m-s-1-1",
        "m-s-1-2",
        "m-s-1-3",
        "m-s-1-4",
      ]);
    } finally {
      other.close();
    }
  });

  it("a full disk (SQLite's page limit reached): every caller of the commit gets the error, none is told its task is stored; once there is room, writes go on", async () => {
    const pages = (database.sqlite.query("PRAGMA page_count").get() as { page_count: number }).page_count;
    database.sqlite.exec(`PRAGMA max_page_count = ${pages}`);
    const names = ids("big", 8);
    const { ok, failed } = await outcomes(
      names,
      createAll(names, (id) => `${SECRET} ${id} ${"x".repeat(20_000)}`),
    );
    expect(ok).toEqual([]);
    for (const err of failed.values()) expect(err.message).toMatch(/full/);
    expect(onDisk().size).toBe(0);
    expectLogged("big-00", /full/);

    database.sqlite.exec(`PRAGMA max_page_count = ${pages * 1000}`);
    const again = ids("after", 4);
    await Promise.all(createAll(again));
    expect([...onDisk().keys()].sort()).toEqual(again);
  });
});

describe("data that cannot be stored", () => {
  const deep = (levels: number): Record<string, unknown> => {
    let v: unknown = [];
    for (let i = 0; i < levels; i++) v = [v];
    return { a: v };
  };
  const cyclic = (): Record<string, unknown> => {
    const o: Record<string, unknown> = {};
    o.self = o;
    return o;
  };

  it.each([
    ["nested 100,000 levels", () => deep(100_000), /nested too deeply/],
    ["cyclic", cyclic, /cyclic/i],
  ])(
    "metadata %s is refused by create() itself, with nothing recorded; the other creates of the turn commit",
    async (_label, metadata, reason) => {
      const good = createAll(["before"]);
      let refusal: unknown;
      try {
        await store.create({
          id: "bad",
          contextId: "c",
          owner: "alpha",
          message: msg("bad"),
          executor: "echo",
          timestamp: now(),
          metadata: metadata(),
        });
      } catch (err) {
        refusal = err;
      }
      expect(refusal).toBeInstanceOf(UnstorableData);
      expect((refusal as UnstorableData).what).toBe("metadata");
      expect((refusal as Error).message).toMatch(reason);
      const after = createAll(["after"]);
      await Promise.all([...good, ...after]);
      expect([...onDisk().keys()].sort()).toEqual(["after", "before"]);
      // Refused before it was pending: the same message is a new task once sent again, storable.
      const retry = await store.create({
        id: "bad-again",
        contextId: "c",
        owner: "alpha",
        message: msg("bad"),
        executor: "echo",
        timestamp: now(),
      });
      expect(retry.created).toBe(true);
      await retry.committed;
    },
  );

  it("a message that cannot be stored fails its own write at once; the task's other writes of the turn commit", async () => {
    await Promise.all(createAll(["t1"]));
    const working = store.record("t1", { status: { state: "TASK_STATE_WORKING", timestamp: now() } });
    const bad = store.record("t1", { history: [{ ...msg("x"), metadata: cyclic() }] });
    await expect(bad).rejects.toBeInstanceOf(UnstorableData);
    await working;
    expect(onDisk().get("t1")).toBe("TASK_STATE_WORKING");
    expect((await store.get("t1", "alpha"))?.history?.map((m) => m.messageId)).toEqual(["m-t1"]);
  });

  it("an artifact that cannot be serialised fails only its task's commit: none of that task's writes are applied, the other tasks' are", async () => {
    const names = ids("t", 6);
    await Promise.all(createAll(names));
    const artifact = (id: string): Artifact => ({
      artifactId: `a-${id}`,
      parts: [{ text: "ok" }],
      ...(id === "t-02" ? { metadata: { size: 10n } } : {}),
    });
    const writes = names.flatMap((id) => [
      finishTask(store, id, { state: "TASK_STATE_COMPLETED", timestamp: now() }, [artifact(id)]),
      store.record(id, {
        events: {
          firstSeq: 1,
          items: [{ statusUpdate: { taskId: id, contextId: `c-${id}`, status: { state: "TASK_STATE_COMPLETED" } } }],
        },
        rowSeq: 1,
      }),
    ]);
    const settled = await Promise.allSettled(writes);
    const rejected = settled.flatMap((s, i) => (s.status === "rejected" ? [[names[Math.floor(i / 2)], s.reason]] : []));
    expect(rejected.map(([id]) => id)).toEqual(["t-02", "t-02"]);
    expect(rejected[0][1]).toBeInstanceOf(UnstorableData);
    expect((rejected[0][1] as UnstorableData).what).toBe("artifacts");
    const disk = onDisk();
    for (const id of names) expect(disk.get(id)).toBe(id === "t-02" ? "TASK_STATE_SUBMITTED" : "TASK_STATE_COMPLETED");
    expect(await store.eventsAfter("t-02", 0)).toEqual([]);
    expect(await store.eventsAfter("t-03", 0)).toHaveLength(1);
    expectLogged("t-02", /artifacts cannot be stored/);
    // No group failure: the refusal happened before any of t-02's statements ran.
    expect(log).not.toMatch(/group commit failed/);
  });

  it("a write to a task whose creation was never committed is refused, not dropped in silence", async () => {
    database.sqlite.exec(
      `CREATE TRIGGER poison BEFORE INSERT ON tasks WHEN NEW.id = 'lost' BEGIN SELECT RAISE(ABORT, 'injected failure'); END`,
    );
    await expect(createAll(["lost"])[0]).rejects.toThrow(/injected failure/);
    const later = finishTask(store, "lost", { state: "TASK_STATE_COMPLETED", timestamp: now() }, []);
    await expect(later).rejects.toBeInstanceOf(WriteRefused);
    await expect(later).rejects.toThrow(/task lost is not stored/);
    expect(onDisk().size).toBe(0);
  });
});
