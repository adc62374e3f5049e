/**
 * A busy database is waited for, not an unexpected failure (issue 20: under the fuzzer the push dispatcher logged
 * "SQLiteError: database is locked"). Another connection to the home's file (the readiness probe's worker, a
 * sqlite3 shell, the CLI) holds the write lock for a moment while the node's group transaction is open, begun
 * by an idempotency look-up: the push delivery queue's writes and the task store's commit made on the node's
 * connection then wait for the lock (busy_timeout) and succeed. SQLite answers SQLITE_BUSY at once, without
 * waiting, when a transaction that has read tries to write while another holds the lock; the group transaction
 * therefore takes the write lock when it begins.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { join } from "node:path";
import { createLogger } from "../../src/log";
import { openDatabase, type OpenDatabase } from "../../src/store/database";
import { SqliteCallerTokens } from "../../src/store/sqlite-caller-tokens";
import { SqlitePeerRegistry } from "../../src/store/sqlite-peer-registry";
import { SqliteDeliveryQueue } from "../../src/store/sqlite-delivery-queue";
import { SqliteTaskStore } from "../../src/store/sqlite-task-store";
import { tempDir } from "../helpers/temp-dir";

let dir: string;
let path: string;
let database: OpenDatabase;

beforeEach(() => {
  dir = tempDir("a2a-busy-");
  path = join(dir, "a2a-node.db");
  database = openDatabase(path);
});
afterEach(() => {
  database.close();
});

/**
 * Another thread's connection takes the write lock (BEGIN IMMEDIATE and a write), says so, holds it for
 * `holdMs` (well within the node's busy_timeout of 5 s), then commits. Resolves once it holds the lock; `done`
 * once it let go.
 */
async function holdWriteLock(holdMs: number): Promise<{ done: Promise<void> }> {
  const source = `
    import { Database } from "bun:sqlite";
    self.onmessage = (e) => {
      const db = new Database(e.data.path);
      db.exec("PRAGMA busy_timeout = 5000");
      db.exec("BEGIN IMMEDIATE");
      db.query("INSERT INTO health_probe (id, checked_at) VALUES (1, 'x') ON CONFLICT(id) DO UPDATE SET checked_at = 'y'").run();
      postMessage("locked");
      Bun.sleepSync(e.data.holdMs);
      db.exec("COMMIT");
      db.close();
      postMessage("done");
    };`;
  const worker = new Worker(`data:text/javascript,${encodeURIComponent(source)}`);
  const locked = Promise.withResolvers<void>();
  const done = Promise.withResolvers<void>();
  worker.onmessage = (e: MessageEvent<string>) => (e.data === "locked" ? locked.resolve() : done.resolve());
  worker.postMessage({ path, holdMs });
  await locked.promise;
  return { done: done.promise.finally(() => worker.terminate()) };
}

describe("another connection holding the write lock", () => {
  it("is waited for by the push queue's writes and the task store's commit inside the node's open group transaction", async () => {
    let log = "";
    const store = new SqliteTaskStore(database, { log: createLogger((line) => (log += line)) });
    const queue = new SqliteDeliveryQueue(database);
    const now = new Date().toISOString();
    await queue.add([{ id: "d1", task_id: "t0", config_id: "c", body: "{}", next_attempt_at: now }]);

    const other = await holdWriteLock(500);
    // An idempotency look-up opens the group transaction; the dispatcher then records an attempt and a delivery.
    const created = await store.create({
      id: "t1",
      contextId: "c1",
      owner: "alpha",
      message: { messageId: "m1", role: "ROLE_USER", parts: [{ text: "hi" }] },
      executor: "echo",
      timestamp: now,
    });
    await queue.retry("d1", 1, now, "503");
    await queue.add([{ id: "d2", task_id: "t1", config_id: "c", body: "{}", next_attempt_at: now }]);
    await queue.remove("d1");
    await created.committed;
    await other.done;

    expect((await store.get("t1", "alpha"))?.status.state).toBe("TASK_STATE_SUBMITTED");
    expect((await queue.load()).map((d) => d.id)).toEqual(["d2"]);
    expect(log).toBe(""); // no failed commit, nothing retried task by task
  });
});

describe("the CLI's read-then-write transactions (peers add, tokens add) on a node's busy file", () => {
  it("wait for another connection's write lock instead of failing with 'database is locked'", async () => {
    const peers = new SqlitePeerRegistry(database.db);
    const tokens = new SqliteCallerTokens(database.db);
    const other = await holdWriteLock(300);
    const peer = peers.add({ name: "gamma", url: "https://gamma.example:9443" });
    const { created } = tokens.add("ci");
    await other.done;
    expect(peer.name).toBe("gamma");
    expect(peers.get("gamma")?.url).toBe("https://gamma.example:9443");
    expect(tokens.list().map((t) => t.name)).toEqual([created.name]);
  });
});
