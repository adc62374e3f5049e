/**
 * ListTasks bounded in bytes, on a real SQLite file: pages cut by the tasks' stored sizes, continued without
 * gaps or repeats, a task too large on its own returned with parts left out and a note, the size columns
 * written with the rows and backfilled by their migration.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Database } from "bun:sqlite";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { openDatabase, type OpenDatabase } from "../../src/store/database";
import { applyMigrations } from "../../src/store/migrate";
import { migrations } from "../../src/store/migrations.gen";
import { SqliteTaskStore } from "../../src/store/sqlite-task-store";
import { OMITTED_KEY } from "../../src/store/list-budget";
import type { Artifact, ListTasksParams, ListTasksResult, Message, Task } from "../../src/protocol/types";
import { finishTask } from "../helpers/store-writes";
import { tempDir } from "../helpers/temp-dir";

const BUDGET = 64 * 1024;
const OVERHEAD = 512; // what the planner adds to each task's stored sizes (list-budget.ts)
const OWNER = "alpha";

let dir: string;
let path: string;
let database: OpenDatabase;
let store: SqliteTaskStore;

beforeEach(() => {
  dir = tempDir("a2a-list-");
  path = join(dir, "a2a-node.db");
  database = openDatabase(path);
  store = new SqliteTaskStore(database, { maxListBytes: BUDGET });
});
afterEach(() => {
  database.close();
});

const ts = (i: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString();
const bytes = (v: unknown) => Buffer.byteLength(JSON.stringify(v));
/** Text of exactly `n` UTF-8 bytes, with two- and four-byte characters in it (bytes are not characters). */
const text = (n: number) => `é😀${"x".repeat(Math.max(0, n - 6))}`;
const user = (id: string, t: string): Message => ({ messageId: id, role: "ROLE_USER", parts: [{ text: t }] });

interface Shape {
  message?: number;
  artifact?: number;
  reply?: number;
  metadata?: Record<string, unknown>;
  state?: "TASK_STATE_COMPLETED" | "TASK_STATE_FAILED";
  owner?: string;
}

/** A task created in one commit and finished in another (insert, then update), with parts of given sizes. */
async function task(id: string, i: number, s: Shape = {}): Promise<void> {
  const owner = s.owner ?? OWNER;
  await (
    await store.create({
      id,
      contextId: `ctx-${id}`,
      owner,
      message: user(`m-${id}`, s.message ? text(s.message) : `hi ${id}`),
      executor: "echo",
      timestamp: ts(i),
    })
  ).committed;
  const artifacts: Artifact[] = s.artifact ? [{ artifactId: `${id}-a`, parts: [{ text: text(s.artifact) }] }] : [];
  const message = s.reply
    ? ({ messageId: `r-${id}`, role: "ROLE_AGENT", parts: [{ text: text(s.reply) }] } as Message)
    : undefined;
  await finishTask(
    store,
    id,
    { state: s.state ?? "TASK_STATE_COMPLETED", timestamp: ts(i), ...(message ? { message } : {}) },
    artifacts,
    s.metadata,
  );
}

async function walk(params: ListTasksParams, on: SqliteTaskStore = store): Promise<ListTasksResult[]> {
  const pages: ListTasksResult[] = [];
  let pageToken: string | undefined;
  do {
    const page = await on.list(OWNER, { ...params, pageToken });
    pages.push(page);
    pageToken = page.nextPageToken || undefined;
  } while (pageToken);
  return pages;
}

const ids = (pages: ListTasksResult[]) => pages.flatMap((p) => p.tasks.map((t) => t.id));
const note = (t: Task) =>
  t.metadata?.[OMITTED_KEY] as { parts: string[]; taskBytes: number; maxListBytes: number; reason: string } | undefined;
const sizes = (id: string) =>
  database.sqlite.query("SELECT head_bytes, history_bytes, artifacts_bytes FROM tasks WHERE id = ?1").get(id);
const stored = (id: string) =>
  database.sqlite
    .query("SELECT id, context_id, status_message, metadata, history, artifacts FROM tasks WHERE id = ?1")
    .get(id) as Record<string, string | null>;
/** The sizes a row must have: the UTF-8 bytes of what it stores. */
function expectedSizes(row: Record<string, string | null>) {
  const b = (s: string | null) => (s === null ? 0 : Buffer.byteLength(s));
  return {
    head_bytes: b(row.id) + b(row.context_id) + b(row.status_message) + b(row.metadata),
    history_bytes: b(row.history),
    artifacts_bytes: b(row.artifacts),
  };
}

describe("ListTasks bounded in bytes", () => {
  // 40 tasks with artifacts of 0.5-20 KiB: several fit a 64 KiB page, never all of them.
  const artifactOf = (i: number) => 500 + ((i * 7919) % 20_000);
  async function forty(): Promise<string[]> {
    const made: string[] = [];
    for (let i = 0; i < 40; i++) {
      await task(`t${String(i).padStart(2, "0")}`, i, { artifact: artifactOf(i) });
      made.push(`t${String(i).padStart(2, "0")}`);
    }
    return made.reverse(); // newest first
  }

  it("cuts pages to what fits the budget, and the pages together hold every task once, newest first", async () => {
    const expected = await forty();
    const pages = await walk({ includeArtifacts: true, pageSize: 100 });
    expect(pages.length).toBeGreaterThan(3);
    expect(ids(pages)).toEqual(expected);
    for (const [n, page] of pages.entries()) {
      expect(bytes(page.tasks)).toBeLessThanOrEqual(BUDGET);
      expect(page.totalSize).toBe(40);
      expect(page.pageSize).toBe(100);
      expect(page.tasks.every((t) => note(t) === undefined)).toBe(true);
      // Every task whole: its artifacts as GetTask has them.
      for (const t of page.tasks) expect(t.artifacts).toEqual((await store.get(t.id, OWNER))?.artifacts);
      // Full: the next page's first task would not have fitted (counting what the planner adds per task).
      const next = pages[n + 1]?.tasks[0];
      if (next) expect(bytes(page.tasks) + bytes(next) + OVERHEAD * (page.tasks.length + 1)).toBeGreaterThan(BUDGET);
    }
    expect(pages[pages.length - 1].nextPageToken).toBe("");
  });

  it("still ends a page at pageSize when the bytes would allow more, and continues from there", async () => {
    const expected = await forty();
    const pages = await walk({ pageSize: 3, historyLength: 0 });
    expect(pages.map((p) => p.tasks.length)).toEqual([...Array(13).fill(3), 1]);
    expect(ids(pages)).toEqual(expected);
  });

  it("leaves a listing without artifacts as it was: their bytes do not count, and none are read", async () => {
    const expected = await forty();
    const page = await store.list(OWNER, { pageSize: 100 });
    expect(page.tasks.map((t) => t.id)).toEqual(expected);
    expect(page.nextPageToken).toBe("");
    expect(page.tasks.every((t) => t.artifacts === undefined && t.history?.length === 1)).toBe(true);
    const unbounded = new SqliteTaskStore(database, { maxListBytes: 256 * 1024 * 1024 });
    expect(page).toEqual(await unbounded.list(OWNER, { pageSize: 100 }));
  });

  it("returns a task larger than the budget alone, its artifacts left out with a note; the pages around it continue exactly", async () => {
    await task("old", 1, { artifact: 1000 });
    await task("big", 2, { artifact: 100_000 });
    await task("new", 3, { artifact: 1000 });
    const pages = await walk({ includeArtifacts: true });
    expect(pages.map((p) => p.tasks.map((t) => t.id))).toEqual([["new"], ["big"], ["old"]]);
    const big = pages[1].tasks[0];
    expect(big.artifacts).toBeUndefined();
    expect(big.history).toEqual((await store.get("big", OWNER))?.history);
    expect(note(big)).toEqual({
      parts: ["artifacts"],
      taskBytes: expect.any(Number),
      maxListBytes: BUDGET,
      reason: expect.stringMatching(/max_list_bytes.*GetTask/),
    });
    expect(note(big)?.taskBytes).toBeGreaterThan(100_000);
    expect(bytes(pages[1])).toBeLessThanOrEqual(BUDGET);
    expect(pages.every((p) => p.totalSize === 3)).toBe(true);
    // The other tasks are whole and carry no note; GetTask returns the big one whole, without a note.
    expect(pages[0].tasks[0].artifacts?.[0].parts[0]).toEqual({ text: text(1000) });
    expect(note(pages[0].tasks[0])).toBeUndefined();
    const whole = await store.get("big", OWNER);
    expect(whole?.artifacts?.[0].parts[0]).toEqual({ text: text(100_000) });
    expect(whole?.metadata).toBeUndefined();
    // Without artifacts it is small again: one page of three, nothing left out.
    const plain = await store.list(OWNER, {});
    expect(plain.tasks.map((t) => t.id)).toEqual(["new", "big", "old"]);
    expect(plain.tasks.every((t) => note(t) === undefined)).toBe(true);
  });

  it("keeps a task's own metadata beside the note", async () => {
    await task("big", 1, { artifact: 100_000, metadata: { mine: "kept" } });
    const [t] = (await store.list(OWNER, { includeArtifacts: true })).tasks;
    expect(t.metadata).toMatchObject({ mine: "kept", [OMITTED_KEY]: { parts: ["artifacts"] } });
  });

  it("leaves the history out too when the task is still too large without its artifacts, unless historyLength 0 asked for none", async () => {
    await task("talk", 1, { message: 80_000, artifact: 1000 });
    expect(note((await store.list(OWNER, { includeArtifacts: true })).tasks[0])?.parts).toEqual([
      "artifacts",
      "history",
    ]);
    const plain = (await store.list(OWNER, {})).tasks[0];
    expect(note(plain)?.parts).toEqual(["history"]);
    expect(plain.history).toBeUndefined();
    expect(plain.status.state).toBe("TASK_STATE_COMPLETED");
    const noHistory = (await store.list(OWNER, { includeArtifacts: true, historyLength: 0 })).tasks[0];
    expect(note(noHistory)).toBeUndefined();
    expect(noHistory.artifacts?.[0].parts[0]).toEqual({ text: text(1000) });
  });

  it("leaves the status message out last, and names only parts the task had", async () => {
    await task("reply", 1, { reply: 80_000 });
    const [t] = (await store.list(OWNER, { includeArtifacts: true })).tasks;
    expect(note(t)?.parts).toEqual(["history", "status.message"]);
    expect(t.status).toEqual({ state: "TASK_STATE_COMPLETED", timestamp: ts(1) });
    expect(bytes(t)).toBeLessThanOrEqual(BUDGET);
    // A task whose metadata alone is over the budget has nothing more to leave out than its history.
    await task("meta", 2, { metadata: { blob: text(80_000) } });
    const [m] = (await store.list(OWNER, { pageSize: 1 })).tasks;
    expect(m.id).toBe("meta");
    expect(note(m)?.parts).toEqual(["history"]);
    expect(m.metadata?.blob).toBe(text(80_000));
  });

  it("never reads the parts it leaves out, nor the tasks past the page", async () => {
    await task("past", 1, { artifact: 1000 });
    await task("big", 2, { artifact: 100_000 });
    // Parts no listing may touch: reading them would fail to parse.
    database.sqlite.exec("UPDATE tasks SET artifacts = 'not json' WHERE id = 'big'");
    database.sqlite.exec("UPDATE tasks SET artifacts = 'not json', history = 'not json' WHERE id = 'past'");
    const first = await store.list(OWNER, { includeArtifacts: true });
    expect(first.tasks.map((t) => t.id)).toEqual(["big"]);
    expect(note(first.tasks[0])?.parts).toEqual(["artifacts"]);
    await expect(store.list(OWNER, { includeArtifacts: true, pageToken: first.nextPageToken })).rejects.toThrow(
      SyntaxError,
    );
  });

  it("gives the true totalSize and a gapless walk under filters while pages shrink", async () => {
    for (let i = 0; i < 20; i++)
      await task(`f${String(i).padStart(2, "0")}`, i, {
        artifact: 15_000,
        state: i % 3 === 0 ? "TASK_STATE_FAILED" : "TASK_STATE_COMPLETED",
      });
    await task("other", 30, { artifact: 15_000, owner: "beta" });
    const failed = await walk({ includeArtifacts: true, status: "TASK_STATE_FAILED" });
    expect(ids(failed)).toEqual(["f18", "f15", "f12", "f09", "f06", "f03", "f00"]);
    expect(failed.length).toBeGreaterThan(1);
    expect(failed.every((p) => p.totalSize === 7 && bytes(p.tasks) <= BUDGET)).toBe(true);
    const recent = await walk({ includeArtifacts: true, statusTimestampAfter: ts(9) });
    expect(ids(recent)).toEqual(["f19", "f18", "f17", "f16", "f15", "f14", "f13", "f12", "f11", "f10"]);
    expect(recent.every((p) => p.totalSize === 10)).toBe(true);
    expect(await store.list(OWNER, { contextId: "ctx-f04", includeArtifacts: true })).toMatchObject({
      totalSize: 1,
      nextPageToken: "",
      tasks: [{ id: "f04" }],
    });
  });

  it("writes the size columns with the row: on insert, on update, and for a task created and finished in one commit", async () => {
    await (
      await store.create({
        id: "a",
        contextId: "ctx-é",
        owner: OWNER,
        message: user("m-a", text(3000)),
        executor: "echo",
        timestamp: ts(1),
      })
    ).committed;
    expect(sizes("a")).toEqual(expectedSizes(stored("a")));
    await finishTask(
      store,
      "a",
      {
        state: "TASK_STATE_COMPLETED",
        timestamp: ts(2),
        message: { messageId: "r", role: "ROLE_AGENT", parts: [{ text: text(500) }] },
      },
      [{ artifactId: "x", parts: [{ text: text(7000) }] }],
      { note: "ü" },
    );
    expect(sizes("a")).toEqual(expectedSizes(stored("a")));
    expect((sizes("a") as { artifacts_bytes: number }).artifacts_bytes).toBeGreaterThan(7000);

    const one = await store.create({
      id: "b",
      contextId: "ctx-b",
      owner: OWNER,
      message: user("m-b", "hi"),
      executor: "echo",
      timestamp: ts(3),
      metadata: { k: "v" },
    });
    void finishTask(store, "b", { state: "TASK_STATE_COMPLETED", timestamp: ts(3) }, [
      { artifactId: "y", parts: [{ text: text(2000) }] },
    ]);
    await one.committed;
    expect(sizes("b")).toEqual(expectedSizes(stored("b")));
  });
});

describe("migration 0005: tasks as a rowid table with size columns", () => {
  it("keeps every row as it was, backfills their sizes, and they are listed within the budget like new ones", async () => {
    database.close();
    rmSync(path, { force: true });
    const sqlite = new Database(path, { create: true, strict: true });
    const before = migrations.filter((m) => m.tag < "0005");
    const through0005 = migrations.filter((m) => m.tag < "0006");
    expect(before.length).toBe(through0005.length - 1);
    applyMigrations(sqlite, before);
    const insert = sqlite.prepare(
      `INSERT INTO tasks (id, context_id, owner, state, status_message, status_timestamp, metadata, request_message_id, executor, history, artifacts, created_at, updated_at)
       VALUES (?1, ?2, 'alpha', 'TASK_STATE_COMPLETED', ?3, ?4, ?5, ?1, 'echo', ?6, ?7, ?4, ?4)`,
    );
    const history = (t: string) => JSON.stringify([user("m", t)]);
    const artifacts = (t: string) => JSON.stringify([{ artifactId: "a", parts: [{ text: t }] }]);
    const reply = JSON.stringify({ messageId: "r", role: "ROLE_AGENT", parts: [{ text: "done é" }] });
    insert.run("old-small", "ctx-ü", reply, ts(1), JSON.stringify({ k: "😀" }), history("hi"), artifacts(text(2000)));
    insert.run("old-big", "ctx-big", null, ts(2), null, history("hello"), artifacts(text(100_000)));
    insert.run("old-new", "ctx-new", null, ts(3), null, history(text(30_000)), "[]");
    const rowsBefore = sqlite.query("SELECT * FROM tasks ORDER BY id").all();
    expect(applyMigrations(sqlite, through0005)).toEqual(["0005_tasks_rowid_list_sizes"]);
    const columns = Object.keys(rowsBefore[0] as object).join(", ");
    expect(sqlite.query(`SELECT ${columns} FROM tasks ORDER BY id`).all()).toEqual(rowsBefore);
    const table = (sqlite.query("SELECT sql FROM sqlite_master WHERE name = 'tasks'").get() as { sql: string }).sql;
    expect(table).not.toMatch(/WITHOUT ROWID/i);
    // Small columns first, the JSON last: reading the former never walks a large row's overflow pages.
    expect(
      (sqlite.query("SELECT name FROM pragma_table_info('tasks')").all() as { name: string }[])
        .map((c) => c.name)
        .slice(-4),
    ).toEqual(["status_message", "metadata", "history", "artifacts"]);
    const indexes = (
      sqlite
        .query(
          "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'tasks' AND sql IS NOT NULL ORDER BY name",
        )
        .all() as { name: string }[]
    ).map((r) => r.name);
    expect(indexes).toEqual(["tasks_context", "tasks_owner_recent", "tasks_owner_request_message", "tasks_unfinished"]);
    sqlite.close();

    database = openDatabase(path);
    store = new SqliteTaskStore(database, { maxListBytes: BUDGET });
    for (const id of ["old-small", "old-big", "old-new"]) expect(sizes(id)).toEqual(expectedSizes(stored(id)));
    const pages = await walk({ includeArtifacts: true });
    expect(pages.map((p) => p.tasks.map((t) => t.id))).toEqual([["old-new"], ["old-big"], ["old-small"]]);
    expect(note(pages[1].tasks[0])?.parts).toEqual(["artifacts"]);
    expect(pages[2].tasks[0].artifacts?.[0].parts[0]).toEqual({ text: text(2000) });
    expect(pages.every((p) => p.totalSize === 3 && bytes(p.tasks) <= BUDGET)).toBe(true);
  });
});
