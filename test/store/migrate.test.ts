import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Database } from "bun:sqlite";
import { drizzle } from "drizzle-orm/bun-sqlite";
import { join } from "node:path";
import { applyMigrations, type Migration } from "../../src/store/migrate";
import { migrations } from "../../src/store/migrations.gen";
import { tempDir } from "../helpers/temp-dir";

let dir: string;
let sqlite: Database;
const tables = () =>
  (sqlite.query("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as { name: string }[]).map(
    (r) => r.name,
  );
const recorded = () => sqlite.query('SELECT hash, created_at FROM "__drizzle_migrations" ORDER BY created_at').all();

beforeEach(() => {
  dir = tempDir("a2a-migrate-");
  sqlite = new Database(join(dir, "a.db"), { create: true, strict: true });
});
afterEach(() => {
  sqlite.close();
});

describe("applyMigrations", () => {
  it("applies every embedded migration to a new database once, recording each as drizzle does", () => {
    expect(applyMigrations(sqlite, migrations)).toEqual(migrations.map((m) => m.tag));
    expect(tables()).toEqual(
      expect.arrayContaining(["tasks", "task_events", "peers", "push_configs", "push_deliveries"]),
    );
    expect(recorded()).toEqual(migrations.map((m) => ({ hash: m.hash, created_at: m.folderMillis })));
    expect(applyMigrations(sqlite, migrations)).toEqual([]);
    expect(recorded()).toHaveLength(migrations.length);
  });

  it("takes up a database that drizzle's own migrator brought part of the way, keeping its data", () => {
    const db = drizzle(sqlite);
    (db as unknown as { dialect: { migrate: Function }; session: unknown }).dialect.migrate(
      migrations.slice(0, 2),
      (db as unknown as { session: unknown }).session,
      { migrationsFolder: "unused" },
    );
    sqlite.exec("INSERT INTO peers (name, url) VALUES ('beta', 'https://beta:9443')");
    expect(applyMigrations(sqlite, migrations)).toEqual(migrations.slice(2).map((m) => m.tag));
    expect(sqlite.query("SELECT name, url FROM peers").all()).toEqual([{ name: "beta", url: "https://beta:9443" }]);
    expect(recorded()).toHaveLength(migrations.length);
  });

  it("moves the plain-HTTP listener's tasks and webhooks from owner 'local' to '@local', touching no other owner", () => {
    const upTo = migrations.findIndex((m) => m.tag === "0004_loopback_owner");
    expect(upTo).toBeGreaterThan(0);
    applyMigrations(sqlite, migrations.slice(0, upTo));
    const task = (id: string, owner: string) =>
      sqlite.exec(
        `INSERT INTO tasks (id, context_id, owner, state, status_timestamp, request_message_id, executor, history, artifacts, created_at, updated_at)
         VALUES ('${id}', 'c', '${owner}', 'TASK_STATE_COMPLETED', 't', 'm-${id}', 'echo', '[]', '[]', 't', 't')`,
      );
    task("t1", "local");
    task("t2", "alice");
    task("t3", "locale");
    sqlite.exec(
      "INSERT INTO push_configs (task_id, id, owner, url, created_at) VALUES ('t1', 'p1', 'local', 'https://hook', 't'), ('t2', 'p2', 'alice', 'https://hook', 't')",
    );
    expect(applyMigrations(sqlite, migrations)).toEqual(migrations.slice(upTo).map((m) => m.tag));
    expect(sqlite.query("SELECT id, owner FROM tasks ORDER BY id").all()).toEqual([
      { id: "t1", owner: "@local" },
      { id: "t2", owner: "alice" },
      { id: "t3", owner: "locale" },
    ]);
    expect(sqlite.query("SELECT id, owner FROM push_configs ORDER BY id").all()).toEqual([
      { id: "p1", owner: "@local" },
      { id: "p2", owner: "alice" },
    ]);
  });

  it("counts the tasks a database already holds per owner and state, and keeps the count with every later write", () => {
    const upTo = migrations.findIndex((m) => m.tag === "0008_task_counts");
    expect(upTo).toBeGreaterThan(0);
    applyMigrations(sqlite, migrations.slice(0, upTo));
    const task = (id: string, owner: string, state: string) =>
      sqlite.exec(
        `INSERT INTO tasks (id, context_id, owner, state, status_timestamp, request_message_id, executor, history, artifacts, created_at, updated_at)
         VALUES ('${id}', 'c', '${owner}', '${state}', 't', 'm-${id}', 'echo', '[]', '[]', 't', 't')`,
      );
    task("t1", "alpha", "TASK_STATE_COMPLETED");
    task("t2", "alpha", "TASK_STATE_COMPLETED");
    task("t3", "alpha", "TASK_STATE_WORKING");
    task("t4", "beta", "TASK_STATE_COMPLETED");
    expect(applyMigrations(sqlite, migrations)).toEqual(migrations.slice(upTo).map((m) => m.tag));
    const kept = () => sqlite.query("SELECT owner, state, n FROM task_counts WHERE n <> 0 ORDER BY owner, state").all();
    const real = () =>
      sqlite.query("SELECT owner, state, count(*) AS n FROM tasks GROUP BY owner, state ORDER BY owner, state").all();
    expect(kept()).toEqual([
      { owner: "alpha", state: "TASK_STATE_COMPLETED", n: 2 },
      { owner: "alpha", state: "TASK_STATE_WORKING", n: 1 },
      { owner: "beta", state: "TASK_STATE_COMPLETED", n: 1 },
    ]);
    sqlite.exec("UPDATE tasks SET state = 'TASK_STATE_FAILED' WHERE id = 't3'");
    sqlite.exec("UPDATE tasks SET artifacts = '[1]' WHERE id = 't4'"); // no state change
    sqlite.exec("UPDATE tasks SET owner = 'gamma' WHERE id = 't2'");
    task("t5", "beta", "TASK_STATE_SUBMITTED");
    sqlite.exec("DELETE FROM tasks WHERE id = 't1'");
    expect(kept()).toEqual(real());
    expect(kept()).toHaveLength(4);
  });

  it("leaves the database as it was when a migration fails", () => {
    const broken: Migration[] = [
      ...migrations,
      {
        tag: "9999_broken",
        sql: ["CREATE TABLE fine (a text);", "CREATE TABLE tasks (a text);"],
        folderMillis: 9_999_999_999_999,
        hash: "x",
      },
    ];
    applyMigrations(sqlite, migrations);
    expect(() => applyMigrations(sqlite, broken)).toThrow(/already exists/);
    expect(tables()).not.toContain("fine");
    expect(recorded()).toHaveLength(migrations.length);
    expect(sqlite.inTransaction).toBe(false);
  });
});
