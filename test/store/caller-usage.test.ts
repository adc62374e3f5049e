/**
 * caller_usage (src/store/schema.ts, src/store/postgres/schema.ts): what each caller's stored tasks take,
 * kept by triggers in the transaction of every write, so it is always exactly what the tables hold: each
 * task row's size columns and its events' JSON. The contract suite checks what usage() answers; here, that the
 * sums equal the tables through every kind of write on SQLite and Postgres (the Postgres fold with two
 * replicas writing at once included), and that each migration counts what a database already held.
 */
import { SQL } from "bun";
import { join } from "node:path";
import { Database } from "bun:sqlite";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log";
import type { Message } from "../../src/protocol/types";
import { openDatabase, type OpenDatabase } from "../../src/store/database";
import { applyMigrations } from "../../src/store/migrate";
import { migrations as sqliteMigrations } from "../../src/store/migrations.gen";
import { applyPostgresMigrations, type PostgresDatabase } from "../../src/store/postgres/database";
import { migrations as pgMigrations } from "../../src/store/postgres/migrations.gen";
import { PostgresTaskStore } from "../../src/store/postgres/postgres-task-store";
import { SqliteTaskStore } from "../../src/store/sqlite-task-store";
import type { TaskStore } from "../../src/tasks/task-store";
import { freshDatabase } from "../helpers/postgres";
import { emptyPostgres } from "../helpers/postgres-stores";
import { finishTask } from "../helpers/store-writes";
import { tempDir } from "../helpers/temp-dir";

const msg = (id: string, text: string): Message => ({ messageId: id, role: "ROLE_USER", parts: [{ text }] });
const OLD = "2020-01-01T00:00:00.000Z";

/** A task's life with every kind of write: create, progress with events, artifacts streamed, an answer, the end. */
async function life(store: TaskStore, id: string, owner: string, size: number) {
  await (
    await store.create({
      id,
      contextId: `c-${id}`,
      owner,
      message: msg(`m-${id}`, "q".repeat(size)),
      executor: "echo",
      timestamp: OLD,
    })
  ).committed;
  const working = { state: "TASK_STATE_WORKING" as const, timestamp: OLD };
  await store.record(id, {
    status: working,
    events: { firstSeq: 1, items: [{ statusUpdate: { taskId: id, contextId: `c-${id}`, status: working } }] },
    rowSeq: 1,
  });
  const chunk = { artifactId: "a", parts: [{ text: "é".repeat(size) }] };
  await store.record(id, {
    artifacts: [chunk],
    events: { firstSeq: 2, items: [{ artifactUpdate: { taskId: id, contextId: `c-${id}`, artifact: chunk } }] },
  });
  await store.record(id, { history: [msg(`a-${id}`, "answer")] });
  await finishTask(store, id, {
    state: "TASK_STATE_COMPLETED",
    timestamp: OLD,
    message: { ...msg(`r-${id}`, "done"), role: "ROLE_AGENT" },
  });
}

describe("caller_usage on SQLite", () => {
  let dir: string;
  let database: OpenDatabase;
  beforeEach(() => {
    dir = tempDir("a2a-usage-");
    database = openDatabase(join(dir, "db.sqlite"));
  });
  afterEach(() => {
    database.close();
  });

  const kept = () =>
    database.sqlite
      .query("SELECT owner, tasks, bytes FROM caller_usage WHERE tasks <> 0 OR bytes <> 0 ORDER BY owner")
      .all();
  const real = () =>
    database.sqlite
      .query(
        `SELECT owner, count(*) AS tasks, sum(head_bytes + history_bytes + artifacts_bytes
           + coalesce((SELECT sum(octet_length(events)) FROM task_events e WHERE e.task_id = tasks.id), 0)) AS bytes
         FROM tasks GROUP BY owner ORDER BY owner`,
      )
      .all();

  it("equals the rows and events stored, through creates, updates, events and retention", async () => {
    const store = new SqliteTaskStore(database);
    for (let i = 0; i < 6; i++) await life(store, `0${i}`.padStart(26, "0"), i % 2 ? "alpha" : "beta", 1000 * (i + 1));
    store.flush();
    expect(kept()).toEqual(real());
    expect((kept() as { bytes: number }[]).every((u) => u.bytes > 0)).toBe(true);
    const { owner: _alpha, ...alpha } = kept().find((u) => (u as { owner: string }).owner === "alpha") as {
      owner: string;
      tasks: number;
      bytes: number;
    };
    expect(await store.usage("alpha")).toEqual(alpha);
    expect(await store.deleteFinished("2021-01-01T00:00:00.000Z", 4)).toHaveLength(4);
    expect(kept()).toEqual(real());
    await store.deleteFinished("2021-01-01T00:00:00.000Z", 100);
    expect(kept()).toEqual([]);
  });

  it("the migration counts what a database already holds, and the triggers keep it from there", () => {
    const sqlite = new Database(join(dir, "old.sqlite"), { strict: true });
    try {
      const upTo = sqliteMigrations.findIndex((m) => m.tag === "0010_caller_usage");
      expect(upTo).toBeGreaterThan(0);
      applyMigrations(sqlite, sqliteMigrations.slice(0, upTo));
      const task = (id: string, owner: string, history: string) =>
        sqlite.exec(
          `INSERT INTO tasks (id, context_id, owner, state, status_timestamp, request_message_id, executor, history, artifacts, created_at, updated_at, head_bytes, history_bytes, artifacts_bytes)
           VALUES ('${id}', 'c', '${owner}', 'TASK_STATE_COMPLETED', 't', 'm-${id}', 'echo', '${history}', '[]', 't', 't', 10, ${history.length}, 2)`,
        );
      task("t1", "alpha", "[1,2,3]");
      task("t2", "alpha", "[1]");
      task("t3", "beta", "[]");
      sqlite.exec(
        "INSERT INTO task_events (task_id, seq, last_seq, events) VALUES ('t1', 1, 2, '[{\"a\":1},{\"b\":2}]')",
      );
      applyMigrations(sqlite, sqliteMigrations);
      const usage = () =>
        sqlite
          .query("SELECT owner, tasks, bytes FROM caller_usage WHERE tasks <> 0 OR bytes <> 0 ORDER BY owner")
          .all();
      expect(usage()).toEqual([
        { owner: "alpha", tasks: 2, bytes: 10 + 7 + 2 + 10 + 3 + 2 + 17 },
        { owner: "beta", tasks: 1, bytes: 10 + 2 + 2 },
      ]);
      sqlite.exec("UPDATE tasks SET history_bytes = 100 WHERE id = 't2'");
      sqlite.exec("DELETE FROM task_events WHERE task_id = 't1'");
      sqlite.exec("DELETE FROM tasks WHERE id = 't3'");
      expect(usage()).toEqual([{ owner: "alpha", tasks: 2, bytes: 10 + 7 + 2 + 10 + 100 + 2 }]);
      // The push configs' owner index came with it.
      expect(sqlite.query("SELECT name FROM sqlite_master WHERE name = 'push_configs_owner'").get()).toEqual({
        name: "push_configs_owner",
      });
    } finally {
      sqlite.close();
    }
  });
});

describe("caller_usage on Postgres", () => {
  let database: PostgresDatabase;
  beforeEach(async () => {
    database = await emptyPostgres(8);
  });
  afterEach(async () => {
    await database.close();
  });
  const replica = () => new PostgresTaskStore(database, { log: createLogger(() => {}) });
  async function sums() {
    const kept =
      await database.sql`SELECT owner, sum(tasks)::int AS tasks, sum(bytes)::int AS bytes FROM caller_usage GROUP BY owner HAVING sum(tasks) <> 0 OR sum(bytes) <> 0 ORDER BY owner`;
    const real =
      await database.sql`SELECT owner, count(*)::int AS tasks, sum(head_bytes + history_bytes + artifacts_bytes
        + coalesce((SELECT sum(octet_length(events)) FROM task_events e WHERE e.task_id = tasks.id), 0))::int AS bytes
      FROM tasks GROUP BY owner ORDER BY owner`;
    return { kept: [...kept], real: [...real] };
  }

  it("equals the rows and events stored through every kind of write and retention, before and after a fold", async () => {
    const store = replica();
    for (let i = 0; i < 6; i++) await life(store, `0${i}`.padStart(26, "0"), i % 2 ? "alpha" : "beta", 1000 * (i + 1));
    await store.flush();
    const before = await sums();
    expect(before.kept).toEqual(before.real);
    await store.compactCounts();
    expect(((await database.sql`SELECT count(*)::int AS n FROM caller_usage`) as { n: number }[])[0].n).toBe(2);
    expect(await sums()).toEqual(before);
    await store.deleteFinished("2021-01-01T00:00:00.000Z", 4);
    const after = await sums();
    expect(after.kept).toEqual(after.real);
    await store.deleteFinished("2021-01-01T00:00:00.000Z", 100);
    expect((await sums()).kept).toEqual([]);
    expect(await store.usage("alpha")).toEqual({ tasks: 0, bytes: 0 });
  });

  it("stays exact while two replicas write and fold at once", async () => {
    const [a, b] = [replica(), replica()];
    const writes = (store: PostgresTaskStore, prefix: string) =>
      Promise.all(
        Array.from({ length: 20 }, (_, i) => life(store, `${prefix}${i}`, i % 3 ? "alpha" : "beta", 200 + i)),
      );
    const folds = async () => {
      for (let i = 0; i < 10; i++) await Promise.all([a.compactCounts(), b.compactCounts()]);
    };
    await Promise.all([writes(a, "a"), writes(b, "b"), folds()]);
    await Promise.all([a.flush(), b.flush()]);
    const s = await sums();
    expect(s.kept).toEqual(s.real);
    expect(s.real.reduce((n, r) => n + (r as { tasks: number }).tasks, 0)).toBe(40);
  });

  it("the migration counts what a database already holds", async () => {
    const db = await freshDatabase("usage");
    const sql = new SQL(db.url, { max: 1 });
    try {
      const upTo = pgMigrations.findIndex((m) => m.tag === "0005_caller_usage");
      expect(upTo).toBeGreaterThan(0);
      await applyPostgresMigrations(sql, pgMigrations.slice(0, upTo));
      const task = (id: string, owner: string) =>
        sql`INSERT INTO tasks (id, context_id, owner, state, status_timestamp, request_message_id, executor, created_at, updated_at, history, artifacts, head_bytes, history_bytes, artifacts_bytes)
            VALUES (${id}, 'c', ${owner}, 'TASK_STATE_COMPLETED', 't', ${`m-${id}`}, 'echo', 't', 't', '[]', '[]', 10, 20, 30)`;
      await task("t1", "alpha");
      await task("t2", "alpha");
      await task("t3", "beta");
      await sql`INSERT INTO task_events (task_id, seq, last_seq, events) VALUES ('t3', 1, 1, '[{"x":1}]')`;
      expect(await applyPostgresMigrations(sql, pgMigrations)).toEqual(pgMigrations.slice(upTo).map((m) => m.tag));
      const usage = async () => [
        ...(await sql`SELECT owner, sum(tasks)::int AS tasks, sum(bytes)::int AS bytes FROM caller_usage GROUP BY owner HAVING sum(tasks) <> 0 OR sum(bytes) <> 0 ORDER BY owner`),
      ];
      expect(await usage()).toEqual([
        { owner: "alpha", tasks: 2, bytes: 120 },
        { owner: "beta", tasks: 1, bytes: 60 + 9 },
      ]);
      await sql`UPDATE tasks SET artifacts_bytes = 130 WHERE id = 't1'`;
      await sql`DELETE FROM task_events WHERE task_id = 't3'`;
      await sql`DELETE FROM tasks WHERE id = 't3'`;
      expect(await usage()).toEqual([{ owner: "alpha", tasks: 2, bytes: 220 }]);
    } finally {
      await sql.close();
      await db.drop();
    }
  });
});
