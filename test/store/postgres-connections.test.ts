/**
 * The Postgres store when the server ends its connections (pg_terminate_backend: a failover, a DBA, a
 * network cut) with the server still up: a write sent on a connection the server already closed never ran,
 * so it is sent again on a live one instead of failing its task.
 */
import { SQL } from "bun";
import { afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import { createLogger } from "../../src/log";
import type { PostgresDatabase } from "../../src/store/postgres/database";
import { PostgresLeases } from "../../src/store/postgres/postgres-leases";
import { PostgresTaskStore } from "../../src/store/postgres/postgres-task-store";
import { emptyPostgres } from "../helpers/postgres-stores";

const POOL = 4;
let database: PostgresDatabase;
let admin: SQL;
const msg = (id: string) => ({ messageId: id, role: "ROLE_USER" as const, parts: [{ text: id }] });
const now = () => new Date().toISOString();

beforeEach(async () => {
  database = await emptyPostgres(POOL);
  admin = new SQL(inject("postgresAdminUrl"), { max: 1 });
});
afterEach(async () => {
  await admin.close();
  await database.close();
});

/** Opens every connection of the pool, then has the server end them all (they sit idle in the pool, dead). */
async function killPool(): Promise<void> {
  await Promise.all(Array.from({ length: POOL }, () => database.sql`SELECT pg_sleep(0.05)`));
  const [{ db }] = (await database.sql`SELECT current_database() AS db`) as { db: string }[];
  const killed = await admin`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = ${db}`;
  expect(killed.length).toBeGreaterThanOrEqual(POOL);
}

describe("the Postgres task store after the server ended its connections", () => {
  it("commits the next writes (a create, a change with events) on live connections instead of failing them", async () => {
    const leases = new PostgresLeases(database.sql, "a", 60_000);
    const store = new PostgresTaskStore(database, { leases, log: createLogger(() => {}) });
    await (
      await store.create({
        id: "t1",
        contextId: "c",
        owner: "alpha",
        message: msg("m1"),
        executor: "echo",
        timestamp: now(),
      })
    ).committed;

    await killPool();
    const status = { state: "TASK_STATE_WORKING" as const, timestamp: now() };
    await store.record("t1", {
      status,
      events: { firstSeq: 1, items: [{ statusUpdate: { taskId: "t1", contextId: "c", status } }] },
      rowSeq: 1,
    });
    expect((await store.get("t1", "alpha"))?.status.state).toBe("TASK_STATE_WORKING");
    expect(await store.lastEventSeq("t1")).toBe(1);

    await killPool();
    const created = await store.create({
      id: "t2",
      contextId: "c",
      owner: "alpha",
      message: msg("m2"),
      executor: "echo",
      timestamp: now(),
    });
    expect(created.created).toBe(true); // its own row, not taken for another's
    await created.committed;
    expect((await store.get("t2", "alpha"))?.id).toBe("t2");
    await store.flush();
  });
});
