import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { join } from "node:path";
import { openDatabase, type OpenDatabase } from "../../src/store/database";
import { SqlitePushConfigStore } from "../../src/store/sqlite-push-config-store";
import { tempDir } from "../helpers/temp-dir";

let dir: string;
let path: string;
let database: OpenDatabase;
let store: SqlitePushConfigStore;

beforeEach(() => {
  dir = tempDir("a2a-push-store-");
  path = join(dir, "a2a-node.db");
  database = openDatabase(path);
  store = new SqlitePushConfigStore(database);
});
afterEach(() => {
  database.close();
});

const queued = (configId?: string) =>
  (
    database.sqlite
      .query(
        configId
          ? "SELECT count(*) AS n FROM push_deliveries WHERE config_id = ?1"
          : "SELECT count(*) AS n FROM push_deliveries",
      )
      .get(...(configId ? [configId] : [])) as { n: number }
  ).n;

function queue(taskId: string, configId: string, id: string) {
  database.sqlite
    .query(
      "INSERT INTO push_deliveries (id, task_id, config_id, body, attempts, next_attempt_at) VALUES (?1, ?2, ?3, '{}', 0, ?4)",
    )
    .run(id, taskId, configId, new Date().toISOString());
}

// What every PushConfigStore does is in the contract (push-config-store-contract.ts); here, SQLite's own part:
// the delivery rows deleted with their config, transactions on the shared connection, the file.
describe("SqlitePushConfigStore", async () => {
  it("delete removes the config and only its own queued deliveries", async () => {
    await store.create("alpha", { id: "gone", taskId: "t1", url: "https://h.example/1" });
    await store.create("alpha", { id: "kept", taskId: "t1", url: "https://h.example/2" });
    queue("t1", "gone", "d1");
    queue("t1", "gone", "d2");
    queue("t1", "kept", "d3");
    expect(await store.delete("alpha", "t1", "gone")).toBe(true);
    expect(await store.get("alpha", "t1", "gone")).toBeUndefined();
    expect(queued("gone")).toBe(0);
    expect(queued("kept")).toBe(1);
    expect(await store.delete("alpha", "t1", "gone")).toBe(false);
  });

  it("a delete while a transaction of the shared connection is open waits for it to end, then commits on its own", async () => {
    await store.create("alpha", { id: "c", taskId: "t1", url: "https://h.example/" });
    database.sqlite.exec("BEGIN"); // what the task store's group commit leaves open during a turn
    let done = false;
    const deleting = store.delete("alpha", "t1", "c").then((r) => ((done = true), r));
    await new Promise<void>((r) => setImmediate(r));
    expect(done).toBe(false);
    database.sqlite.exec("ROLLBACK"); // the group ends (how, is none of the delete's business)
    expect(await deleting).toBe(true);
    expect(await store.get("alpha", "t1", "c")).toBeUndefined();
  });

  it("keeps configs across a reopen of the database file", async () => {
    const c = await store.create("alpha", {
      id: "",
      taskId: "t1",
      url: "https://h.example/",
      token: "tok",
      authentication: { scheme: "Basic", credentials: "dTpw" },
    });
    database.close();
    database = openDatabase(path);
    store = new SqlitePushConfigStore(database);
    expect(await store.get("alpha", "t1", c.id)).toEqual({ ...c, authentication: { scheme: "Basic" } });
    expect((await store.forDelivery("t1", c.id))?.authentication).toEqual({ scheme: "Basic", credentials: "dTpw" });
  });
});

describe("writes while the task store's group transaction is open", () => {
  // The group commit (SqliteTaskStore) opens a transaction at a turn's first idempotency read and commits it
  // at the end of the turn. It used to open as a read snapshot: another connection (the readiness probe writes
  // health_probe through its own) that committed meanwhile made any write in that snapshot fail at once with
  // SQLITE_BUSY_SNAPSHOT, which no busy timeout waits out (the fuzzer hit it on create and delete, -32603). The
  // group now takes the write lock when it begins (BEGIN IMMEDIATE), so no other connection commits inside it.
  it("creates and deletes configs while the group is open; no other connection commits inside the group", async () => {
    const { SqliteTaskStore } = await import("../../src/store/sqlite-task-store");
    const { Database } = await import("bun:sqlite");
    const tasks = new SqliteTaskStore(database);
    const other = new Database(path, { strict: true });
    other.exec("PRAGMA busy_timeout = 0");
    try {
      await store.create("alpha", { id: "old", taskId: "t0", url: "https://h.example/" });
      const snapshotThenCommit = async () => {
        // The turn's first create reads for idempotency: the group transaction opens with a snapshot...
        const created = await tasks.create({
          id: crypto.randomUUID(),
          contextId: "c",
          owner: "alpha",
          message: { messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text: "x" }] },
          executor: "echo",
          timestamp: new Date().toISOString(),
        });
        expect(database.sqlite.inTransaction).toBe(true);
        // ...holding the write lock: another connection cannot commit after the group's first read.
        expect(() =>
          other
            .query(
              "INSERT INTO health_probe (id, checked_at) VALUES (1, ?1) ON CONFLICT(id) DO UPDATE SET checked_at = excluded.checked_at",
            )
            .run(new Date().toISOString()),
        ).toThrow(/locked/);
        return created;
      };
      const first = await snapshotThenCommit();
      expect(await store.create("alpha", { id: "c1", taskId: "t1", url: "https://h.example/" })).toMatchObject({
        id: "c1",
      });
      await first.committed;
      const second = await snapshotThenCommit();
      expect(await store.delete("alpha", "t0", "old")).toBe(true);
      await second.committed;
      // Both are on disk, seen by another connection.
      expect(other.query("SELECT id FROM push_configs ORDER BY id").all()).toEqual([{ id: "c1" }]);
    } finally {
      other.close();
    }
  });
});
