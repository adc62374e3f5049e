/**
 * PostgresLeases with PostgresTaskStore, two replicas on one real database: a task is leased to the replica
 * that creates it, claimed by one replica only once its lease ran out, and the replica that lost it can no
 * longer write to it (fenced off), so only one runner's writes count at a time.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log";
import type { PostgresDatabase } from "../../src/store/postgres/database";
import { DB_NOW_MS, PostgresLeases } from "../../src/store/postgres/postgres-leases";
import { PostgresReplicaMessages } from "../../src/store/postgres/postgres-replica-messages";
import { PostgresTaskStore } from "../../src/store/postgres/postgres-task-store";
import { WriteRefused } from "../../src/tasks/task-store";
import { emptyPostgres } from "../helpers/postgres-stores";

let database: PostgresDatabase;
const replica = (name: string) => {
  const leases = new PostgresLeases(database.sql, name, 60_000);
  return {
    leases,
    store: new PostgresTaskStore(database, { leases, log: createLogger(() => {}) }),
    replicas: new PostgresReplicaMessages(database.sql, leases),
  };
};
const msg = (id: string) => ({ messageId: id, role: "ROLE_USER" as const, parts: [{ text: id }] });

beforeEach(async () => {
  database = await emptyPostgres(6);
});
afterEach(async () => {
  await database.close();
});

describe("task leases on Postgres", () => {
  it("leases a new task to its creator; another replica claims it only once the lease ran out, and the old holder is fenced off", async () => {
    const a = replica("a");
    const b = replica("b");
    const created = await a.store.create({
      id: "t1",
      contextId: "c",
      owner: "alpha",
      message: msg("m1"),
      executor: "echo",
      timestamp: new Date().toISOString(),
    });
    await created.committed;
    expect(await b.leases.acquire("t1")).toBe(false);
    expect(await b.leases.claimOrphans(10)).toEqual([]);
    await a.store.record("t1", { status: { state: "TASK_STATE_WORKING", timestamp: new Date().toISOString() } });

    // a's replica stalled past its lease
    await database.sql`UPDATE task_leases SET expires_at = 0 WHERE task_id = 't1'`;
    expect(await b.leases.claimOrphans(10)).toEqual([
      { id: "t1", owner: "alpha", state: "TASK_STATE_WORKING", executor: "echo" },
    ]);
    const late = a.store.record("t1", {
      status: { state: "TASK_STATE_COMPLETED", timestamp: new Date().toISOString() },
    });
    await expect(late).rejects.toBeInstanceOf(WriteRefused);
    await expect(late).rejects.toThrow(/held by another replica/);
    await expect(
      a.store.record("t1", {
        events: {
          firstSeq: 1,
          items: [{ statusUpdate: { taskId: "t1", contextId: "c", status: { state: "TASK_STATE_FAILED" } } }],
        },
      }),
    ).rejects.toBeInstanceOf(WriteRefused);
    await b.store.record("t1", { status: { state: "TASK_STATE_CANCELED", timestamp: new Date().toISOString() } });
    expect((await b.store.get("t1", "alpha"))?.status.state).toBe("TASK_STATE_CANCELED");
    expect(await b.store.lastEventSeq("t1")).toBe(0);
    expect(await a.leases.renew()).toEqual(["t1"]); // a learns it lost the task
    expect(await b.leases.renew()).toEqual([]);
  });

  it("builds a write on the row as the database holds it once another replica held the task in between (its own copy is not trusted then)", async () => {
    const a = replica("a");
    const b = replica("b");
    const now = () => new Date().toISOString();
    await (
      await a.store.create({
        id: "t1",
        contextId: "c",
        owner: "alpha",
        message: msg("m1"),
        executor: "echo",
        timestamp: now(),
      })
    ).committed;
    await a.store.record("t1", { status: { state: "TASK_STATE_WORKING", timestamp: now() }, metadata: { by: "a" } });
    // a's lease runs out; b takes the task over, adds to it, and lets it go.
    await database.sql`UPDATE task_leases SET expires_at = 0 WHERE task_id = 't1'`;
    expect(await b.leases.acquire("t1")).toBe(true);
    await b.store.record("t1", { history: [msg("m2")], metadata: { by: "b", seen: true } });
    await b.leases.release("t1");
    expect(await a.leases.renew()).toEqual(["t1"]);
    // a holds it again and writes: what b wrote stays.
    expect(await a.leases.acquire("t1")).toBe(true);
    await a.store.record("t1", { history: [msg("m3")], metadata: { by: "a again" } });
    const task = await a.store.get("t1", "alpha");
    expect(task?.history?.map((m) => m.messageId)).toEqual(["m1", "m2", "m3"]);
    expect(task?.metadata).toEqual({ by: "a again", seen: true });
    expect(task?.status.state).toBe("TASK_STATE_WORKING");
  });

  it("renews only the tasks the replica holds: a task it abandoned (its writes could not be stored) is let go and claimed by another", async () => {
    const a = replica("a");
    const b = replica("b");
    const now = () => new Date().toISOString();
    for (const id of ["t1", "t2"])
      await (
        await a.store.create({
          id,
          contextId: "c",
          owner: "alpha",
          message: msg(id),
          executor: "echo",
          timestamp: now(),
        })
      ).committed;
    await database.sql`UPDATE task_leases SET expires_at = 0`; // both leases about to run out
    // The database did not answer when a gave t1 up: it stops holding it at once, its lease stays for now.
    a.leases.forget(["t1"]);
    expect(await a.leases.renew()).toEqual([]);
    const expiry = async (id: string) =>
      Number((await database.sql`SELECT expires_at FROM task_leases WHERE task_id = ${id}`)[0]?.expires_at ?? -1);
    expect(await expiry("t1")).toBe(0); // not renewed: it runs out
    expect(await expiry("t2")).toBeGreaterThan(0); // renewed
    expect(await b.leases.claimOrphans(10)).toEqual([
      { id: "t1", owner: "alpha", state: "TASK_STATE_SUBMITTED", executor: "echo" },
    ]);
    // Abandoning deletes a's own lease only: t1 is b's now, and stays so.
    await a.leases.abandon("t1");
    expect([...(await database.sql`SELECT task_id, replica FROM task_leases ORDER BY task_id`)]).toEqual([
      { task_id: "t1", replica: "b" },
      { task_id: "t2", replica: "a" },
    ]);
    await a.leases.abandon("t2");
    expect([...(await database.sql`SELECT task_id FROM task_leases WHERE replica = 'a'`)]).toEqual([]);
    expect(await a.leases.renew()).toEqual([]); // holds nothing
    expect(await b.leases.claimOrphans(10)).toEqual([
      { id: "t2", owner: "alpha", state: "TASK_STATE_SUBMITTED", executor: "echo" },
    ]);
  });

  it("fences off a write that runs while another replica's claim of the task commits: never both", async () => {
    const a = replica("a");
    const now = () => new Date().toISOString();
    await (
      await a.store.create({
        id: "t1",
        contextId: "c",
        owner: "alpha",
        message: msg("m1"),
        executor: "echo",
        timestamp: now(),
      })
    ).committed;
    await database.sql`UPDATE task_leases SET expires_at = 0 WHERE task_id = 't1'`; // a stalled past its lease
    // b claims the task (as claimOrphans does) in a transaction not committed yet.
    const b = await database.sql.reserve();
    try {
      await b`BEGIN`;
      await b.unsafe(`INSERT INTO task_leases (task_id, replica, expires_at) VALUES ('t1', 'b', ${DB_NOW_MS} + 60000)
        ON CONFLICT (task_id) DO UPDATE SET replica = excluded.replica, expires_at = excluded.expires_at WHERE task_leases.expires_at < ${DB_NOW_MS}`);
      const [{ pid }] = (await b`SELECT pg_backend_pid() AS pid`) as { pid: number }[];
      const event = {
        statusUpdate: { taskId: "t1", contextId: "c", status: { state: "TASK_STATE_WORKING" as const } },
      };
      const write = a.store.record("t1", { events: { firstSeq: 1, items: [event] } });
      write.catch(() => {});
      // a's write must wait for the claim's outcome (it reads the lease locked), not go through beside it.
      const waits = (async () => {
        for (;;) {
          const [row] =
            await database.sql`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND ${pid} = ANY(pg_blocking_pids(pid))`;
          if (row) return "waits";
          await Bun.sleep(10); // no event tells when a statement waits in the server: its state is polled
        }
      })();
      expect(
        await Promise.race([
          write.then(
            () => "written",
            () => "refused",
          ),
          waits,
        ]),
      ).toBe("waits");
      await b`COMMIT`;
      await expect(write).rejects.toBeInstanceOf(WriteRefused);
      await expect(write).rejects.toThrow(/held by another replica/);
      expect(await a.store.lastEventSeq("t1")).toBe(0);
    } finally {
      b.release();
    }
  });

  it("lets one replica only claim an orphan when several claim at once", async () => {
    const a = replica("a");
    await (
      await a.store.create({
        id: "t1",
        contextId: "c",
        owner: "alpha",
        message: msg("m1"),
        executor: "echo",
        timestamp: new Date().toISOString(),
      })
    ).committed;
    await database.sql`UPDATE task_leases SET expires_at = 0`;
    const claims = await Promise.all(["b", "c", "d", "e"].map((n) => replica(n).leases.claimOrphans(10)));
    expect(claims.filter((c) => c.length === 1)).toHaveLength(1);
    expect(claims.flat().map((t) => t.id)).toEqual(["t1"]);
  });

  it("takes writes for a task nobody holds (waiting for input, or released) from any replica", async () => {
    const a = replica("a");
    const b = replica("b");
    await (
      await a.store.create({
        id: "t1",
        contextId: "c",
        owner: "alpha",
        message: msg("m1"),
        executor: "echo",
        timestamp: new Date().toISOString(),
      })
    ).committed;
    await a.leases.release("t1");
    await b.store.record("t1", { history: [msg("answer")] });
    expect((await b.store.get("t1", "alpha"))?.history?.map((m) => m.messageId)).toEqual(["m1", "answer"]);
    expect(await b.leases.acquire("t1")).toBe(true);
    expect(await a.leases.acquire("t1")).toBe(false);
  });
  it("keeps a cancel request for the task's holder: one that missed the NOTIFY hears it at its next renewal, as does a replica that takes the task over", async () => {
    const a = replica("a");
    const b = replica("b");
    const heardByA: [string, string][] = [];
    a.replicas.onCancelRequest((taskId, reason) => heardByA.push([taskId, reason]));
    await (
      await a.store.create({
        id: "t1",
        contextId: "c",
        owner: "alpha",
        message: msg("m1"),
        executor: "echo",
        timestamp: new Date().toISOString(),
      })
    ).committed;
    // Nobody listens (a's connection for notices is down): the NOTIFY of this request reaches no one.
    await b.replicas.requestCancel("t1", "canceled by alpha");
    expect(heardByA).toEqual([]);
    expect(await a.leases.renew()).toEqual([]);
    expect(heardByA).toEqual([["t1", "canceled by alpha"]]);
    await a.leases.renew();
    expect(heardByA).toHaveLength(1); // heard once per hold

    // a dies before it applied the cancel: c claims the task and hears the request at its first renewal.
    const c = replica("c");
    const heardByC: [string, string][] = [];
    c.replicas.onCancelRequest((taskId, reason) => heardByC.push([taskId, reason]));
    await database.sql`UPDATE task_leases SET expires_at = 0 WHERE task_id = 't1'`;
    expect((await c.leases.claimOrphans(10)).map((t) => t.id)).toEqual(["t1"]);
    await c.leases.renew();
    expect(heardByC).toEqual([["t1", "canceled by alpha"]]);
  });
});
