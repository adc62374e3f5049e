/**
 * task_counts on Postgres (see the table in src/store/postgres/schema.ts): rows of changes that triggers add
 * with every write to `tasks`, folded now and then by compactCounts. The counts ListTasks gives (totalSize)
 * are in the contract suite; here what only Postgres has: the fold, with two replicas writing and folding
 * at once, and the migration counting the tasks a database already held.
 */
import { SQL } from "bun";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log";
import { applyPostgresMigrations, type PostgresDatabase } from "../../src/store/postgres/database";
import { migrations } from "../../src/store/postgres/migrations.gen";
import { PostgresTaskStore } from "../../src/store/postgres/postgres-task-store";
import { finishTask } from "../helpers/store-writes";
import { freshDatabase } from "../helpers/postgres";
import { emptyPostgres } from "../helpers/postgres-stores";

let database: PostgresDatabase;
const msg = (id: string) => ({ messageId: id, role: "ROLE_USER" as const, parts: [{ text: id }] });
const replica = () => new PostgresTaskStore(database, { log: createLogger(() => {}) });
/** Each (owner, state)'s count from task_counts, and what `tasks` holds, for comparing. */
async function counts() {
  const kept =
    await database.sql`SELECT owner, state, sum(n)::int AS n FROM task_counts GROUP BY owner, state HAVING sum(n) <> 0 ORDER BY owner, state`;
  const real =
    await database.sql`SELECT owner, state, count(*)::int AS n FROM tasks GROUP BY owner, state ORDER BY owner, state`;
  return { kept: [...kept], real: [...real] };
}
const rows = async () => ((await database.sql`SELECT count(*)::int AS n FROM task_counts`) as { n: number }[])[0].n;

async function run(
  store: PostgresTaskStore,
  id: string,
  owner: string,
  final: "TASK_STATE_COMPLETED" | "TASK_STATE_FAILED",
) {
  await (
    await store.create({
      id,
      contextId: `c-${id}`,
      owner,
      message: msg(`m-${id}`),
      executor: "echo",
      timestamp: new Date().toISOString(),
    })
  ).committed;
  await store.record(id, { status: { state: "TASK_STATE_WORKING", timestamp: new Date().toISOString() } });
  await finishTask(store, id, { state: final, timestamp: new Date().toISOString() });
}

beforeEach(async () => {
  database = await emptyPostgres(8);
});
afterEach(async () => {
  await database.close();
});

describe("task counts on Postgres", () => {
  it("folds the rows of changes into one per owner and state, keeping every count", async () => {
    const store = replica();
    for (let i = 0; i < 6; i++)
      await run(store, `t${i}`, i % 2 ? "alpha" : "beta", i % 3 ? "TASK_STATE_COMPLETED" : "TASK_STATE_FAILED");
    await run(store, "t6", "alpha", "TASK_STATE_COMPLETED");
    const before = await counts();
    expect(before.kept).toEqual(before.real);
    expect(await rows()).toBeGreaterThan(before.real.length); // a row per create and two per state change
    await store.compactCounts();
    expect(await rows()).toBe(before.real.length); // states with no task left (SUBMITTED, WORKING) are gone
    expect(await counts()).toEqual(before);
    expect((await store.list("alpha", {})).totalSize).toBe(4);
    expect((await store.list("beta", { status: "TASK_STATE_FAILED" })).totalSize).toBe(1);
    await store.flush();
  });

  it("stays exact while two replicas write and fold at once", async () => {
    const [a, b] = [replica(), replica()];
    const writes = (store: PostgresTaskStore, prefix: string) =>
      Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          run(store, `${prefix}${i}`, i % 3 ? "alpha" : "beta", i % 4 ? "TASK_STATE_COMPLETED" : "TASK_STATE_FAILED"),
        ),
      );
    const folds = async () => {
      for (let i = 0; i < 10; i++) await Promise.all([a.compactCounts(), b.compactCounts()]);
    };
    await Promise.all([writes(a, "a"), writes(b, "b"), folds()]);
    await Promise.all([a.flush(), b.flush()]);
    const after = await counts();
    expect(after.kept).toEqual(after.real);
    expect(after.real.reduce((n, r) => n + (r as { n: number }).n, 0)).toBe(80);
    expect((await a.list("alpha", {})).totalSize + (await b.list("beta", {})).totalSize).toBe(80);
  });
});

describe("the task_counts migration", () => {
  it("counts the tasks a database already holds, per owner and state", async () => {
    const db = await freshDatabase("counts");
    const sql = new SQL(db.url, { max: 1 });
    try {
      const upTo = migrations.findIndex((m) => m.tag === "0003_task_counts");
      expect(upTo).toBeGreaterThan(0);
      await applyPostgresMigrations(sql, migrations.slice(0, upTo));
      const task = (id: string, owner: string, state: string) =>
        sql`INSERT INTO tasks (id, context_id, owner, state, status_timestamp, request_message_id, executor, created_at, updated_at, history, artifacts)
            VALUES (${id}, 'c', ${owner}, ${state}, 't', ${`m-${id}`}, 'echo', 't', 't', '[]', '[]')`;
      await task("t1", "alpha", "TASK_STATE_COMPLETED");
      await task("t2", "alpha", "TASK_STATE_COMPLETED");
      await task("t3", "alpha", "TASK_STATE_WORKING");
      await task("t4", "beta", "TASK_STATE_COMPLETED");
      expect(await applyPostgresMigrations(sql, migrations)).toEqual(migrations.slice(upTo).map((m) => m.tag));
      const kept =
        await sql`SELECT owner, state, sum(n)::int AS n FROM task_counts GROUP BY owner, state ORDER BY owner, state`;
      expect([...kept]).toEqual([
        { owner: "alpha", state: "TASK_STATE_COMPLETED", n: 2 },
        { owner: "alpha", state: "TASK_STATE_WORKING", n: 1 },
        { owner: "beta", state: "TASK_STATE_COMPLETED", n: 1 },
      ]);
      // From here on the triggers keep it.
      await sql`UPDATE tasks SET state = 'TASK_STATE_FAILED' WHERE id = 't3'`;
      await sql`DELETE FROM tasks WHERE owner = 'alpha' AND state = 'TASK_STATE_COMPLETED'`;
      const later =
        await sql`SELECT owner, state, sum(n)::int AS n FROM task_counts GROUP BY owner, state HAVING sum(n) <> 0 ORDER BY owner, state`;
      expect([...later]).toEqual([
        { owner: "alpha", state: "TASK_STATE_FAILED", n: 1 },
        { owner: "beta", state: "TASK_STATE_COMPLETED", n: 1 },
      ]);
    } finally {
      await sql.close();
      await db.drop();
    }
  });
});
