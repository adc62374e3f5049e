/**
 * A webhook sent with SendMessage (configuration.taskPushNotificationConfig) is stored in its task's own
 * commit: never the task without it (a crash or a failure between two statements left a task running with no
 * webhook, and a retry of the message then found the task and no webhook), nor it without the task. On SQLite
 * it goes with the task's write, so a group commit that fails and is tried again a task at a time stores it
 * with its task. Real SQLite files and a real Postgres.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log";
import type { Message, TaskPushNotificationConfig } from "../../src/protocol/types";
import { openDatabase, type OpenDatabase } from "../../src/store/database";
import type { PostgresDatabase } from "../../src/store/postgres/database";
import { PostgresLeases } from "../../src/store/postgres/postgres-leases";
import { PostgresPushConfigStore } from "../../src/store/postgres/postgres-push-config-store";
import { PostgresTaskStore } from "../../src/store/postgres/postgres-task-store";
import { SqlitePushConfigStore } from "../../src/store/sqlite-push-config-store";
import { SqliteTaskStore } from "../../src/store/sqlite-task-store";
import type { NewTask } from "../../src/tasks/task-store";
import { emptyPostgres } from "../helpers/postgres-stores";

const quiet = createLogger(() => {});
const msg = (id: string): Message => ({ messageId: id, role: "ROLE_USER", parts: [{ text: id }] });
const hook = (taskId: string, url = "https://hooks.example/h"): TaskPushNotificationConfig => ({
  id: `w-${taskId}`,
  taskId,
  url,
  token: "tok",
});
const newTask = (id: string, url?: string): NewTask => ({
  id,
  contextId: id,
  owner: "alpha",
  message: msg(`m-${id}`),
  executor: "echo",
  timestamp: new Date().toISOString(),
  webhook: hook(id, url),
});

describe("on Postgres, a webhook sent with a new task", () => {
  let database: PostgresDatabase;
  beforeEach(async () => {
    database = await emptyPostgres(4);
  });
  afterEach(async () => {
    await database.sql`DROP TRIGGER IF EXISTS poison ON push_configs`;
    await database.sql`DROP FUNCTION IF EXISTS poison_hook()`;
    await database.close();
  });

  it("is stored in the statement that inserts the task: both or neither", async () => {
    const leases = new PostgresLeases(database.sql, "a", 60_000);
    const store = new PostgresTaskStore(database, { leases, keepWebhooks: true, log: quiet });
    const configs = new PostgresPushConfigStore(database);
    expect(store.keepsWebhooks).toBe(true);

    const made = await store.create(newTask("t1"));
    await made.committed;
    expect((await configs.forTask("t1")).map((c) => [c.id, c.owner, c.url, c.token])).toEqual([
      ["w-t1", "alpha", "https://hooks.example/h", "tok"],
    ]);

    // The webhook's insert fails: the task is not stored either.
    await database.sql.unsafe(`CREATE FUNCTION poison_hook() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
      IF NEW.url = 'https://poison.example/' THEN RAISE EXCEPTION 'injected failure'; END IF; RETURN NEW; END $$`);
    await database.sql.unsafe(
      `CREATE TRIGGER poison BEFORE INSERT ON push_configs FOR EACH ROW EXECUTE FUNCTION poison_hook()`,
    );
    await expect(store.create(newTask("t2", "https://poison.example/"))).rejects.toThrow(/injected failure/);
    expect(await store.get("t2", "alpha")).toBeUndefined();
    expect(await configs.forTask("t2")).toEqual([]);
    await store.flush();
  });
});

describe("on SQLite, a webhook sent with a new task", () => {
  let dir: string;
  let database: OpenDatabase;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "a2a-webhook-with-task-"));
    database = openDatabase(join(dir, "db.sqlite"));
  });
  afterEach(() => {
    database.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("is stored with its task when a failed group commit is tried again a task at a time; a task that fails takes its webhook with it", async () => {
    const configs = new SqlitePushConfigStore(database);
    const store = new SqliteTaskStore(database, {
      log: quiet,
      webhooks: (owner, config) => configs.storeWithTask(owner, config),
    });
    expect(store.keepsWebhooks).toBe(true);
    database.sqlite.exec(
      `CREATE TRIGGER poison BEFORE INSERT ON tasks WHEN NEW.id = 'bad' BEGIN SELECT RAISE(ABORT, 'injected failure'); END`,
    );
    const made = await Promise.all([store.create(newTask("good")), store.create(newTask("bad"))]);
    const [good, bad] = await Promise.allSettled(made.map((m) => m.committed));
    expect(good.status).toBe("fulfilled");
    expect(bad.status).toBe("rejected");
    expect((await configs.forTask("good")).map((c) => c.id)).toEqual(["w-good"]);
    expect(await configs.forTask("bad")).toEqual([]);
    // Read back by another connection: what is on disk.
    const other = openDatabase(join(dir, "db.sqlite"));
    try {
      expect(other.sqlite.query("SELECT task_id, id FROM push_configs ORDER BY task_id").all()).toEqual([
        { task_id: "good", id: "w-good" },
      ]);
    } finally {
      other.close();
    }
  });
});

/**
 * Retention deletes a task's webhooks and queued deliveries in the transaction that deletes the task (the
 * push store's forget after it is then a no-op): a crash between the two left webhooks of deleted tasks,
 * counted against their caller's max_push_configs_per_caller for ever.
 */
describe("retention of a task with a webhook", () => {
  const longAgo = "2001-01-01T00:00:00.000Z";
  const old = (id: string): NewTask => ({
    ...newTask(id),
    id: `00000000${id}`.slice(-8).padEnd(26, "0").toUpperCase(),
    timestamp: longAgo,
  });

  it("on SQLite, deletes the webhooks and deliveries with the task, in one transaction", async () => {
    const dir = mkdtempSync(join(tmpdir(), "a2a-webhook-retention-"));
    const database = openDatabase(join(dir, "db.sqlite"));
    try {
      const configs = new SqlitePushConfigStore(database);
      const store = new SqliteTaskStore(database, {
        log: quiet,
        webhooks: (owner, config) => configs.storeWithTask(owner, config),
      });
      const t = old("r1");
      await (
        await store.create({ ...t, webhook: hook(t.id) })
      ).committed;
      await store.record(t.id, { status: { state: "TASK_STATE_COMPLETED", timestamp: longAgo } });
      database.sqlite.run(
        "INSERT INTO push_deliveries (id, task_id, config_id, body, attempts, next_attempt_at) VALUES ('d1', ?, ?, '{}', 0, ?)",
        [t.id, `w-${t.id}`, longAgo],
      );
      expect(await store.deleteFinished(new Date().toISOString(), 10)).toEqual([t.id]);
      // The process dies here, before the push store's forget.
      expect(database.sqlite.query("SELECT count(*) AS n FROM push_configs").get()).toEqual({ n: 0 });
      expect(database.sqlite.query("SELECT count(*) AS n FROM push_deliveries").get()).toEqual({ n: 0 });
      expect(await configs.countForOwner("alpha")).toBe(0);
    } finally {
      database.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("on Postgres, deletes the webhooks and deliveries with the task, in one transaction", async () => {
    const database = await emptyPostgres(4);
    try {
      const store = new PostgresTaskStore(database, { keepWebhooks: true, log: quiet });
      const configs = new PostgresPushConfigStore(database);
      const t = old("r2");
      await (
        await store.create({ ...t, webhook: hook(t.id) })
      ).committed;
      await store.record(t.id, { status: { state: "TASK_STATE_COMPLETED", timestamp: longAgo } });
      await database.sql`INSERT INTO push_deliveries (id, task_id, config_id, body, attempts, next_attempt_at) VALUES ('d1', ${t.id}, ${`w-${t.id}`}, '{}', 0, ${longAgo})`;
      expect(await store.deleteFinished(new Date().toISOString(), 10)).toEqual([t.id]);
      // The process dies here, before the push store's forget.
      expect(await configs.countForOwner("alpha")).toBe(0);
      expect((await database.sql`SELECT count(*)::int AS n FROM push_deliveries`)[0].n).toBe(0);
      await store.flush();
    } finally {
      await database.close();
    }
  });
});
