/**
 * A replica keeps renewing its leases while a claim of orphaned tasks takes long (issue 20: after a database
 * outage a replica took up several tasks at once; its renewals waited for that, its leases ran out, and other
 * replicas took its tasks while it still ran them). On a real Postgres database: the tasks table is locked, so
 * the replica's claim of orphans waits in the server; its lease on the task it runs must still be renewed.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { AgentExecutor, ExecutionOutcome, ExecutionRequest } from "../../src/executors/executor";
import { createLogger } from "../../src/log";
import type { Task } from "../../src/protocol/types";
import type { PostgresDatabase } from "../../src/store/postgres/database";
import { PostgresLeases } from "../../src/store/postgres/postgres-leases";
import { PostgresTaskStore } from "../../src/store/postgres/postgres-task-store";
import { emptyPostgres } from "../helpers/postgres-stores";
import { taskFixture } from "../helpers/task-fixture";

const LEASE_MS = 600;
let database: PostgresDatabase;

beforeEach(async () => {
  database = await emptyPostgres(6);
});
afterEach(async () => {
  await database.close();
});

/** Runs until the test lets it end. */
class HeldExecutor implements AgentExecutor {
  readonly kind = "held";
  readonly release = Promise.withResolvers<void>();
  async execute(_req: ExecutionRequest): Promise<ExecutionOutcome> {
    await this.release.promise;
    return { state: "TASK_STATE_COMPLETED" };
  }
}

describe("lease renewals", () => {
  it("go on while a claim of orphaned tasks waits in the database", async () => {
    const leases = new PostgresLeases(database.sql, "a", LEASE_MS);
    const store = new PostgresTaskStore(database, { leases, log: createLogger(() => {}) });
    const executor = new HeldExecutor();
    const runnerOptions = { maxConcurrent: 4, maxQueued: 10, historyMessages: 20, leases };
    const { runner, handler } = taskFixture({ store, executor, runnerOptions });
    const sent = (
      (await handler.sendMessage(
        {
          message: { messageId: "m1", role: "ROLE_USER", parts: [{ text: "hold" }] },
          configuration: { returnImmediately: true },
        },
        { caller: { name: "alpha", fingerprint: "AA" } },
      )) as { task: Task }
    ).task;
    const expiry = async () =>
      Number(
        (await database.sql`SELECT expires_at FROM task_leases WHERE task_id = ${sent.id} AND replica = 'a'`)[0]
          ?.expires_at ?? 0,
      );
    const locker = await database.sql.reserve();
    const errors: unknown[] = [];
    let stopLeases = () => {};
    try {
      await locker`BEGIN`;
      await locker`LOCK TABLE tasks IN ACCESS EXCLUSIVE MODE`; // a claim reads tasks: it waits
      const [{ pid }] = (await locker`SELECT pg_backend_pid() AS pid`) as { pid: number }[];
      stopLeases = runner.keepLeases((err) => errors.push(err));
      // No event tells when a statement waits in the server, nor when a renewal committed: both are polled.
      for (;;) {
        const [row] =
          await database.sql`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND ${pid} = ANY(pg_blocking_pids(pid)) AND query LIKE '%orphans%'`;
        if (row) break;
        await Bun.sleep(10);
      }
      const before = await expiry();
      const deadline = Date.now() + 20 * LEASE_MS;
      while ((await expiry()) < before + 2 * (LEASE_MS / 3) && Date.now() < deadline) await Bun.sleep(20);
      expect(await expiry(), "the lease renewed while the claim waited").toBeGreaterThanOrEqual(
        before + 2 * (LEASE_MS / 3),
      );
      await locker`COMMIT`;
    } finally {
      stopLeases();
      locker.release();
    }
    executor.release.resolve();
    await runner.settledOf(sent.id)?.catch(() => undefined);
    await runner.shutdown(1000);
    await store.flush();
    expect(errors).toEqual([]);
  });
});
