import { Database } from "bun:sqlite";
import { mkdtempSync, renameSync, rmSync, copyFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openDatabase, type OpenDatabase } from "../../src/store/database";
import { SqliteProbe } from "../../src/store/sqlite-probe";

let dir: string;
let path: string;
let db: OpenDatabase;
let probe: SqliteProbe;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "a2a-probe-"));
  path = join(dir, "a2a-node.db");
  db = openDatabase(path);
  probe = new SqliteProbe(path, 3000);
});

afterEach(() => {
  probe.stop();
  try {
    db.close();
  } catch {}
  rmSync(dir, { recursive: true, force: true });
});

function insertTasks(states: string[]): void {
  const ins = db.sqlite.prepare(
    "INSERT INTO tasks (id, context_id, owner, state, status_timestamp, request_message_id, executor, created_at, updated_at, history, artifacts) VALUES (?1, ?1, 'alpha', ?2, 't', ?1, 'echo', 't', 't', '[]', '[]')",
  );
  states.forEach((s, i) => ins.run(`task-${i}`, s));
}

describe("the database probe (a connection of its own, in a worker)", () => {
  it("a healthy database takes a write, which reads back", async () => {
    expect(await probe.writable()).toEqual({ ok: true, detail: `a write to ${path} committed` });
    const row = db.sqlite.query("SELECT checked_at AS at FROM health_probe WHERE id = 1").get() as { at: string };
    expect(Date.now() - Date.parse(row.at)).toBeLessThan(60_000);
  });

  it("a database file deleted from under the node fails, saying the node writes to a deleted file", async () => {
    rmSync(path);
    const r = await probe.writable();
    expect(r.ok).toBe(false);
    expect(r.detail).toContain(`the database file ${path} is gone`);
  });

  it("a database file replaced by another fails, saying to restart", async () => {
    copyFileSync(path, `${path}.copy`);
    renameSync(`${path}.copy`, path);
    const r = await probe.writable();
    expect(r.ok).toBe(false);
    expect(r.detail).toContain("was replaced after the node opened it");
  });

  it("a database another process holds locked fails, naming the lock", async () => {
    const other = new Database(path);
    other.exec("BEGIN EXCLUSIVE");
    try {
      const r = await probe.writable();
      expect(r.ok).toBe(false);
      expect(r.detail).toMatch(/database is locked.*another process holds a lock/);
    } finally {
      other.exec("ROLLBACK");
      other.close();
    }
    expect((await probe.writable()).ok).toBe(true);
  });

  it("counts stored tasks by state", async () => {
    insertTasks(["TASK_STATE_COMPLETED", "TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_WORKING"]);
    const counts = Object.fromEntries((await probe.countByState()).map((r) => [r.state, r.n]));
    expect(counts).toEqual({ TASK_STATE_COMPLETED: 2, TASK_STATE_FAILED: 1, TASK_STATE_WORKING: 1 });
  });

  it("a probe that gets no answer in time fails with the time it waited", async () => {
    const slow = new SqliteProbe(path, 1);
    try {
      const r = await slow.writable();
      // Either the worker answered within 1 ms (unlikely) or the wait is named.
      if (!r.ok) expect(r.detail).toContain("did not answer within 0.001 s");
    } finally {
      slow.stop();
    }
  });
});
