import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase, type OpenDatabase } from "../../src/store/database";
import { SqlitePushConfigStore } from "../../src/store/sqlite-push-config-store";

let dir: string;
let path: string;
let database: OpenDatabase;
let store: SqlitePushConfigStore;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "a2a-push-store-"));
  path = join(dir, "a2a-node.db");
  database = openDatabase(path);
  store = new SqlitePushConfigStore(database);
});
afterEach(() => {
  database.close();
  rmSync(dir, { recursive: true, force: true });
});

const queued = (configId?: string) =>
  (
    database.sqlite
      .query(configId ? "SELECT count(*) AS n FROM push_deliveries WHERE config_id = ?1" : "SELECT count(*) AS n FROM push_deliveries")
      .get(...(configId ? [configId] : [])) as { n: number }
  ).n;

function queue(taskId: string, configId: string, id: string) {
  database.sqlite
    .query("INSERT INTO push_deliveries (id, task_id, config_id, body, attempts, next_attempt_at) VALUES (?1, ?2, ?3, '{}', 0, ?4)")
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

  it("delete inside an open transaction of the shared connection joins it (savepoint) instead of failing", async () => {
    await store.create("alpha", { id: "c", taskId: "t1", url: "https://h.example/" });
    database.sqlite.exec("BEGIN"); // what the task store's group commit leaves open during a turn
    expect(await store.delete("alpha", "t1", "c")).toBe(true);
    database.sqlite.exec("ROLLBACK");
    expect(await store.get("alpha", "t1", "c")).toBeDefined();
  });

  it("keeps configs across a reopen of the database file", async () => {
    const c = await store.create("alpha", { id: "", taskId: "t1", url: "https://h.example/", token: "tok", authentication: { scheme: "Basic", credentials: "dTpw" } });
    database.close();
    database = openDatabase(path);
    store = new SqlitePushConfigStore(database);
    expect(await store.get("alpha", "t1", c.id)).toEqual({ ...c, authentication: { scheme: "Basic" } });
    expect((await store.forDelivery("t1", c.id))?.authentication).toEqual({ scheme: "Basic", credentials: "dTpw" });
  });
});
