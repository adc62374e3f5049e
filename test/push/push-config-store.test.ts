import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase, type OpenDatabase } from "../../src/store/database";
import { SqlitePushConfigStore } from "../../src/push/push-config-store";
import { A2AError } from "../../src/protocol/errors";

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

describe("SqlitePushConfigStore", () => {
  it("assigns a ULID when the id is empty, keeps a given id, and returns the config as set (token included)", () => {
    const a = store.create("alpha", { id: "", taskId: "t1", url: "https://hooks.example/a", token: "s3cret" });
    expect(a.id).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(a).toEqual({ id: a.id, taskId: "t1", url: "https://hooks.example/a", token: "s3cret" });
    const b = store.create("alpha", { id: "mine", taskId: "t1", url: "https://hooks.example/b", authentication: { scheme: "Bearer", credentials: "xyz" } });
    expect(b.id).toBe("mine");
    expect(store.get("alpha", "t1", "mine")).toEqual({ id: "mine", taskId: "t1", url: "https://hooks.example/b", authentication: { scheme: "Bearer", credentials: "xyz" } });
    expect(store.get("alpha", "t1", a.id)).toEqual(a);
    expect(store.get("alpha", "t1", "nope")).toBeUndefined();
  });

  it("replaces a config created again with the same (taskId, id)", () => {
    store.create("alpha", { id: "c", taskId: "t1", url: "https://old.example/", token: "one" });
    const again = store.create("alpha", { id: "c", taskId: "t1", url: "https://new.example/" });
    expect(again).toEqual({ id: "c", taskId: "t1", url: "https://new.example/" });
    const { configs } = store.list("alpha", "t1");
    expect(configs).toEqual([{ id: "c", taskId: "t1", url: "https://new.example/" }]);
  });

  it("hides another owner's configs and refuses to let it overwrite or delete them", () => {
    store.create("alpha", { id: "c", taskId: "t1", url: "https://alpha.example/", token: "alpha-token" });
    expect(store.get("mallory", "t1", "c")).toBeUndefined();
    expect(store.list("mallory", "t1")).toEqual({ configs: [], nextPageToken: "" });
    expect(store.delete("mallory", "t1", "c")).toBe(false);
    let err: unknown;
    try {
      store.create("mallory", { id: "c", taskId: "t1", url: "https://evil.example/" });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(A2AError);
    expect((err as A2AError).reason).toBe("TASK_NOT_FOUND");
    expect(store.get("alpha", "t1", "c")).toEqual({ id: "c", taskId: "t1", url: "https://alpha.example/", token: "alpha-token" });
    // Delivery sees the config with its owner, for whoever's event it is.
    expect(store.forTask("t1")).toEqual([{ id: "c", taskId: "t1", url: "https://alpha.example/", token: "alpha-token", owner: "alpha" }]);
    expect(store.forDelivery("t1", "c")?.owner).toBe("alpha");
  });

  it("lists one task's configs in pages of pageSize, with a token for the next page", () => {
    for (const id of ["e", "a", "d", "b", "c"]) store.create("alpha", { id, taskId: "t1", url: `https://h.example/${id}` });
    store.create("alpha", { id: "x", taskId: "t2", url: "https://h.example/other-task" });
    store.create("beta", { id: "y", taskId: "t1", url: "https://h.example/other-owner" });

    const p1 = store.list("alpha", "t1", 2);
    expect(p1.configs.map((c) => c.id)).toEqual(["a", "b"]);
    expect(p1.nextPageToken).not.toBe("");
    const p2 = store.list("alpha", "t1", 2, p1.nextPageToken);
    expect(p2.configs.map((c) => c.id)).toEqual(["c", "d"]);
    const p3 = store.list("alpha", "t1", 2, p2.nextPageToken);
    expect(p3).toEqual({ configs: [{ id: "e", taskId: "t1", url: "https://h.example/e" }], nextPageToken: "" });
    // A page exactly filled by the rest says there is no more.
    expect(store.list("alpha", "t1", 5).nextPageToken).toBe("");
    expect(store.list("alpha", "t1").configs).toHaveLength(5);
  });

  it("refuses a page token it did not issue", () => {
    expect(() => store.list("alpha", "t1", 2, "bm90LW91cnM")).toThrow(/pageToken/);
    // A ListTasks-style token (timestamp|id) is refused as invalid params, not misread as a cursor.
    let err: unknown;
    try {
      store.list("alpha", "t1", 2, Buffer.from("2026-01-01T00:00:00.000Z|01ABC").toString("base64url"));
    } catch (e) {
      err = e;
    }
    expect((err as A2AError).code).toBe(-32602);
  });

  it("delete removes the config and only its own queued deliveries", () => {
    store.create("alpha", { id: "gone", taskId: "t1", url: "https://h.example/1" });
    store.create("alpha", { id: "kept", taskId: "t1", url: "https://h.example/2" });
    queue("t1", "gone", "d1");
    queue("t1", "gone", "d2");
    queue("t1", "kept", "d3");
    expect(store.delete("alpha", "t1", "gone")).toBe(true);
    expect(store.get("alpha", "t1", "gone")).toBeUndefined();
    expect(queued("gone")).toBe(0);
    expect(queued("kept")).toBe(1);
    expect(store.delete("alpha", "t1", "gone")).toBe(false);
  });

  it("delete inside an open transaction of the shared connection joins it (savepoint) instead of failing", () => {
    store.create("alpha", { id: "c", taskId: "t1", url: "https://h.example/" });
    database.sqlite.exec("BEGIN"); // what the task store's group commit leaves open during a turn
    expect(store.delete("alpha", "t1", "c")).toBe(true);
    database.sqlite.exec("ROLLBACK");
    expect(store.get("alpha", "t1", "c")).toBeDefined();
  });

  it("keeps configs across a reopen of the database file", () => {
    const c = store.create("alpha", { id: "", taskId: "t1", url: "https://h.example/", token: "tok", authentication: { scheme: "Basic", credentials: "dTpw" } });
    database.close();
    database = openDatabase(path);
    store = new SqlitePushConfigStore(database);
    expect(store.get("alpha", "t1", c.id)).toEqual(c);
  });
});
